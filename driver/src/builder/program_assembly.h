// A schedule turned into the Program a Device runs: each stream gets the
// semaphore waits its operations need (one per semaphore and value, never
// repeated), the increments of operations others wait for, the triggers
// issued after each operation, and an End; each queue gets its ring.
#pragma once

#include "builder/on_chip_space.h"
#include "builder/schedule.h"
#include "tessera/program.h"

#include <string>
#include <vector>

namespace tessera::builder {

// Throws KernelError when the schedule needs more semaphores than the config
// has. The schedule's rings move into the Program (they are left empty).
Program assemble(const arch::HwConfig& cfg, Schedule& schedule, const std::vector<std::string>& labels,
                 const std::vector<Allocation>& tiles);

}  // namespace tessera::builder
