// The exit codes of the coolbench command, documented in docs/cli/coolbench.md.
#pragma once

namespace coolbench::cli {

enum exit_code : int {
  exit_ok = 0,
  exit_error = 1,             ///< an unexpected failure (an NVML or CUDA call failed)
  exit_usage = 2,             ///< bad command line: unknown flag, bad value
  exit_no_gpu = 3,            ///< no NVIDIA driver, NVML or GPU where the command needs one
  exit_bad_device = 4,        ///< the device named does not exist
  exit_timeout = 5,           ///< a wait ran out of time (wait-cool --timeout)
  exit_not_comparable = 6,    ///< compare: the runs measure different things (without --force)
  exit_some_gpus_failed = 7,  ///< run on several GPUs: some failed, the others' results written
  exit_interrupted = 130,     ///< stopped by Ctrl-C where that is not the normal end
};

}  // namespace coolbench::cli
