/* Calls with a suspend mode that is no enumerator, as any C caller may make
 * them: in C an enum parameter holds any int (in C++ it must not). */
#include <nosv.h>
#include <nosv/alpi.h>

int call_alpi_mode_set_int(struct alpi_task *task, int mode, uint64_t args) {
	return alpi_task_suspend_mode_set(task, (alpi_suspend_mode_t)mode, args);
}

int call_nosv_mode_set_int(int mode, uint64_t args) {
	return nosv_set_suspend_mode((nosv_suspend_mode_t)mode, args);
}

int call_alpi_info_get_int(int query, char *buffer, size_t max_length, int *length) {
	return alpi_info_get((alpi_info_t)query, buffer, max_length, length);
}
