/* coexec: topology queries, nOS-V-compatible.
 *
 * Every answer describes the CPUs that the instance manages (the
 * `topology.binding` set), as seen by hwloc. Logical ids run from 0 to
 * count-1 in system-id order; system ids are the kernel's numbers. Calls that
 * ask about "the current" CPU need a task context and otherwise return
 * NOSV_ERR_OUTSIDE_TASK. Calls before nosv_init() return
 * NOSV_ERR_NOT_INITIALIZED (or NULL for the array getters). */
#ifndef NOSV_HWINFO_H
#define NOSV_HWINFO_H

#ifdef __cplusplus
extern "C" {
#endif

typedef enum nosv_topo_level {
	NOSV_TOPO_LEVEL_NODE = 0,
	NOSV_TOPO_LEVEL_NUMA = 1,
	NOSV_TOPO_LEVEL_COMPLEX_SET = 2,
	NOSV_TOPO_LEVEL_CORE = 3,
	NOSV_TOPO_LEVEL_CPU = 4,
	NOSV_TOPO_LEVEL_COUNT = 5
} nosv_topo_level_t;

/* Number of domains at `level`. */
int nosv_get_num_domains(nosv_topo_level_t level);
/* System ids of the domains at `level`, in an array from malloc() that the
 * caller frees, as in nOS-V. */
int *nosv_get_available_domains(nosv_topo_level_t level);
int nosv_get_current_logical_domain(nosv_topo_level_t level);
int nosv_get_current_system_domain(nosv_topo_level_t level);
/* CPUs in the domain with system id `sid` at `level`. */
int nosv_get_num_cpus_in_domain(nosv_topo_level_t level, int sid);

int nosv_get_num_cpus(void);
/* System ids of the managed CPUs (nosv_get_num_cpus() entries), in an array
 * the caller owns and releases with free(); NULL before nosv_init or when
 * memory runs out. */
int *nosv_get_available_cpus(void);
int nosv_get_current_logical_cpu(void);
int nosv_get_current_system_cpu(void);

int nosv_get_num_numa_nodes(void);
/* System ids of the NUMA nodes (nosv_get_num_numa_nodes() entries); the
 * caller frees the array, as for nosv_get_available_cpus(). */
int *nosv_get_available_numa_nodes(void);
int nosv_get_current_logical_numa_node(void);
int nosv_get_current_system_numa_node(void);
int nosv_get_system_numa_id(int logical_numa_id);
int nosv_get_logical_numa_id(int system_numa_id);
int nosv_get_num_cpus_in_numa(int system_numa_id);

#ifdef __cplusplus
}
#endif

#endif /* NOSV_HWINFO_H */
