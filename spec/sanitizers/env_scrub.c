/* Preloaded after the ASan runtime into the Lua interpreter by
 * build-asan/bin/asan-run (mk/sanitizers.mk). Once the loader has used
 * LD_PRELOAD, this drops it from the environment, so the tools a spec starts
 * (ps, curl, sh, ...) run without the ASan runtime: preloaded into
 * uninstrumented programs such as ps and curl, it deadlocks at startup on
 * glibc's locale lock. A Lua subprocess gets the runtime back through
 * build-asan/bin/lua5.4, which is first in PATH during the run. */
#include <stdlib.h>

__attribute__((constructor)) static void env_scrub(void) { unsetenv("LD_PRELOAD"); }
