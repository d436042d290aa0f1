/* Translation unit 2 of the two-TU link test: only the declarations. */
#include "../../gpuir.h"

#ifdef __cplusplus
extern "C"
#endif
int tu_other(void);

int tu_other(void) { return (int)gpuir_dtype_size(GPUIR_F32); }
