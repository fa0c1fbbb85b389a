#pragma once

#include <string_view>

// Naming the calling thread and setting its nice value: the compute pool, the engine thread and
// the server's I/O threads all do it. This sits at the bottom of the house (in tern_kernels, the
// lowest library, but apart from the CPU kernels) so that each layer can reach it without
// depending on another layer's internals.
namespace tern {

// Names the calling thread for top -H, perf and gdb. Linux keeps 15 bytes; a longer name is cut.
void name_this_thread(std::string_view name);

// Sets the calling thread's nice value (lower runs first); false when the system refuses, e.g.
// a negative value without CAP_SYS_NICE.
bool set_this_thread_nice(int nice);

}  // namespace tern
