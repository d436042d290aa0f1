/* gpuir's implementation, in a translation unit of its own.

   gpuir.h is one header of about 32,000 lines: declarations, and the whole
   implementation behind GPUIR_IMPLEMENTATION. Defining it in exactly one
   file compiles the implementation once (about 15 s at -O2); every other
   file includes the header for its declarations only and compiles in a
   moment. `make run` builds this file once into build/gpuir_impl.o and
   links hello_jit.c against it, so editing the example recompiles only the
   example (the tests and tools link the same object). Do the same in your
   own programs. */
#define GPUIR_IMPLEMENTATION
#include "../gpuir.h"
