/* coexec: nOS-V-compatible error codes.
 *
 * Every nosv_* call that is not a getter or setter returns NOSV_SUCCESS (0) or
 * one of the negative codes below. The values match nOS-V 4.x so that code
 * that compares against them keeps working. */
#ifndef NOSV_ERROR_H
#define NOSV_ERROR_H

#ifdef __cplusplus
extern "C" {
#endif

typedef enum nosv_err {
	NOSV_SUCCESS = 0,
	/* A callback is missing where one is required, or present where none is
	 * allowed (an external type with a run callback). */
	NOSV_ERR_INVALID_CALLBACK = -1,
	/* Requested task metadata exceeds NOSV_MAX_METADATA_SIZE. */
	NOSV_ERR_INVALID_METADATA_SIZE = -2,
	/* The call is not valid in the current state (a submit of a task whose
	 * events are pending, detach of a thread that is not attached, shutdown
	 * from a thread that did not init, ...). */
	NOSV_ERR_INVALID_OPERATION = -3,
	/* An argument is invalid (null pointer, unknown flag, bad index). */
	NOSV_ERR_INVALID_PARAMETER = -4,
	/* nosv_init() has not been called, or the last nosv_shutdown() ran. */
	NOSV_ERR_NOT_INITIALIZED = -5,
	/* Memory, or space in the shared segment, ran out. */
	NOSV_ERR_OUT_OF_MEMORY = -6,
	/* The call must be made from a task (or attached thread). */
	NOSV_ERR_OUTSIDE_TASK = -7,
	/* Anything else, including a shared segment that cannot be used. */
	NOSV_ERR_UNKNOWN = -8,
	/* A resource is busy (for example a task that is still running). */
	NOSV_ERR_BUSY = -9,
	/* A wait with a time limit ended before what it waited for (nosv_join
	 * and nosv_wait with a timeout). */
	NOSV_ERR_TIMEOUT = -10,
	/* Not a real code: one past the last one. */
	NOSV_ERR_MAX = -11,
} nosv_err_t;

/* Returns a static, human-readable description of `error_code`, or
 * "Error code not recognized". Safe to call at any time, even before
 * nosv_init(). The string must not be freed. */
const char *nosv_get_error_string(int error_code);

#ifdef __cplusplus
}
#endif

#endif /* NOSV_ERROR_H */
