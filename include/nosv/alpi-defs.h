/* coexec: the optional ALPI features and which of them coexec provides.
 *
 * alpi_feature_check() takes an OR of these bits. coexec provides all four
 * groups: blocking (block, unblock, waitfor_ns), events (increase, test,
 * decrease), resources (cpu count and ids) and suspend (suspend mode and
 * suspend). The bit values are ALPI 1.2's. */
#ifndef ALPI_DEFS_H
#define ALPI_DEFS_H

#ifndef ALPI_FEATURE_BLOCKING
#define ALPI_FEATURE_BLOCKING (1 << 0)
#define ALPI_FEATURE_EVENTS (1 << 1)
#define ALPI_FEATURE_RESOURCES (1 << 2)
#define ALPI_FEATURE_SUSPEND (1 << 3)
#endif

/* Every feature this implementation provides. */
#define ALPI_SUPPORTED_FEATURES                                                                    \
	(ALPI_FEATURE_BLOCKING | ALPI_FEATURE_EVENTS | ALPI_FEATURE_RESOURCES | ALPI_FEATURE_SUSPEND)

#endif /* ALPI_DEFS_H */
