#include "core/api/c_api_support.hpp"

#include <nosv/error.h>

COEXEC_API const char* nosv_get_error_string(int error_code) {
    switch (error_code) {
    case NOSV_SUCCESS:
        return "Operation succeeded";
    case NOSV_ERR_INVALID_CALLBACK:
        return "Invalid callback";
    case NOSV_ERR_INVALID_METADATA_SIZE:
        return "Invalid metadata size (larger than NOSV_MAX_METADATA_SIZE)";
    case NOSV_ERR_INVALID_OPERATION:
        return "Invalid operation in the current state";
    case NOSV_ERR_INVALID_PARAMETER:
        return "Invalid parameter";
    case NOSV_ERR_NOT_INITIALIZED:
        return "Runtime not initialized";
    case NOSV_ERR_OUT_OF_MEMORY:
        return "Out of memory or shared segment space";
    case NOSV_ERR_OUTSIDE_TASK:
        return "Must be called from a task";
    case NOSV_ERR_UNKNOWN:
        return "Unknown error (see stderr for the shared segment)";
    case NOSV_ERR_BUSY:
        return "Resource busy";
    case NOSV_ERR_TIMEOUT:
        return "Timed out";
    default:
        return "Error code not recognized";
    }
}
