// coolbench.measure(..., devices=...): several GPUs at once (docs/python.md, "Several GPUs").
// The GPUs' workers run with the GIL released and take it for each call into Python; the
// calling (main) thread waits and runs Python's signal handlers, so Ctrl-C stops every GPU.
#include "python/devices.hpp"

#include <pybind11/stl.h>

#include <atomic>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <optional>
#include <thread>

#include "coolbench/device.hpp"
#include "coolbench/measure/multi.hpp"
#include "coolbench/measure/protocol.hpp"
#include "coolbench/measure/workload.hpp"
#include "coolbench/report/format.hpp"
#include "coolbench/report/multi_report.hpp"
#include "coolbench/report/run_report.hpp"
#include "python/measure_types.hpp"

namespace coolbench::python {
namespace {

/// What coolbench.measure(devices=...) returns.
class multi_result_py {
 public:
  explicit multi_result_py(measure::multi_result r) : m_r(std::move(r)) {}
  [[nodiscard]] const measure::multi_result& raw() const { return m_r; }

  [[nodiscard]] py::dict results() const {
    py::dict out;
    for (const auto& d : m_r.runs) {
      if (d.result) out[py::int_(d.ordinal)] = py::cast(result(*d.result));
    }
    return out;
  }
  [[nodiscard]] std::map<int, std::string> failures() const {
    std::map<int, std::string> out;
    for (const auto& d : m_r.runs) {
      if (d.failed()) out[d.ordinal] = d.failure();
    }
    return out;
  }
  [[nodiscard]] std::map<int, std::optional<double>> figures_ms() const {
    std::map<int, std::optional<double>> out;
    for (const auto& d : m_r.runs) {
      out[d.ordinal] = d.result && !d.failed() ? measure::figure_of(*d.result) : std::nullopt;
    }
    return out;
  }
  [[nodiscard]] std::string repr() const {
    std::string text = "<coolbench.MultiResult";
    for (const auto& [ordinal, figure] : figures_ms()) {
      text += figure ? fmt::format(" GPU {}: {:.4f} ms;", ordinal, *figure)
                     : fmt::format(" GPU {}: failed;", ordinal);
    }
    for (const auto& s : m_r.spread) {
      text +=
          fmt::format(" spread {:.2f}% over {} {};", 100 * s.max_over_min, s.gpus.size(), s.model);
    }
    text.back() = '>';
    return text;
  }

 private:
  measure::multi_result m_r;
};

/// The ordinals `devices` names, each checked against the GPUs CUDA sees.
std::vector<int> resolve(const py::object& devices) {
  std::vector<int> ordinals;
  if (py::isinstance<py::str>(devices)) {
    if (devices.cast<std::string>() != "all") {
      throw invalid_argument("devices= takes \"all\" or a list of CUDA ordinals, e.g. [0, 1]");
    }
    const int count = device::device::count();
    if (count == 0) {
      throw not_available("devices=\"all\": no NVIDIA GPU or driver is visible to CUDA");
    }
    for (int i = 0; i < count; ++i) ordinals.push_back(i);
    return ordinals;
  }
  try {
    ordinals = devices.cast<std::vector<int>>();
  } catch (const py::cast_error&) {
    throw invalid_argument("devices= takes \"all\" or a list of CUDA ordinals, e.g. [0, 1]");
  }
  if (ordinals.empty()) throw invalid_argument("devices= is empty: name at least one GPU");
  for (int o : ordinals) (void)device::device::get(o);  // no driver, no such GPU: said now
  return ordinals;
}

/// One GPU's calls into Python: the callable its factory made, and what it raised.
struct gpu_calls {
  python_calls calls;
  std::string made;  ///< the callable's name
};

measure::device_job_factory job_factory(const measure_arguments& a, std::map<int, gpu_calls>& calls,
                                        bool is_callable, measure::context_release release,
                                        const std::function<bool()>& stop) {
  return [&a, &calls, is_callable, release, stop](int ordinal) {
    // Before any user code: this worker's GPU current, else the factory's framework works on
    // GPU 0 (a fresh thread's default) and makes a context there.
    device::device::get(ordinal).make_current();
    measure::device_job job;
    if (!is_callable) {
      std::string name;
      {
        py::gil_scoped_acquire gil;
        name = a.workload.cast<std::string>();
      }
      job.w = name.ends_with(".onnx")
                  ? measure::make_model_workload(name, "cuda:" + std::to_string(ordinal), a.dims)
                  : measure::make_workload(name, ordinal);
    } else {
      gpu_calls& mine = calls.at(ordinal);
      {
        py::gil_scoped_acquire gil;
        try {
          mine.calls.run = a.workload(ordinal);
        } catch (py::error_already_set& e) {
          throw error(fmt::format("workload({}) raised {}", ordinal, e.what()));
        }
        if (PyCallable_Check(mine.calls.run.ptr()) == 0) {
          throw invalid_argument(fmt::format(
              "workload({}) returned no callable: with devices= it makes the callable that "
              "runs one inference on that GPU",
              ordinal));
        }
      }
      measure::callable_spec spec;
      spec.name = a.name.value_or("callable");
      spec.run = [&mine] { mine.calls.call(mine.calls.run, "callable"); };
      spec.device = ordinal;
      spec.hold = a.hold.value_or(true);
      spec.flops = a.flops;
      job.w = measure::make_callable_workload(std::move(spec));
    }
    job.env = measure::make_gpu_environment(
        ordinal, std::chrono::milliseconds(a.telemetry_period_ms), stop, release);
    return job;
  };
}

/// Runs measure_devices in a thread of its own while this (the interpreter's main) thread
/// waits with the GIL released and runs Python's signal handlers every 50 ms.
measure::multi_result run_watched(const std::vector<int>& ordinals,
                                  const measure::device_job_factory& make,
                                  const measure::protocol_options& o,
                                  const measure::device_progress_fn& progress,
                                  std::atomic<bool>& stop) {
  std::mutex mutex;
  std::condition_variable finished;
  bool done = false;
  std::optional<measure::multi_result> out;
  std::exception_ptr failure;
  py::gil_scoped_release no_gil;
  std::thread runner([&] {
    try {
      out = measure::measure_devices(ordinals, make, o, progress);
    } catch (...) {
      failure = std::current_exception();
    }
    const std::lock_guard lock(mutex);
    done = true;
    finished.notify_all();
  });
  std::unique_lock lock(mutex);
  while (!finished.wait_for(lock, std::chrono::milliseconds(50), [&] { return done; })) {
    lock.unlock();
    {
      py::gil_scoped_acquire gil;
      if (PyErr_CheckSignals() != 0) {
        PyErr_Clear();  // KeyboardInterrupt (or a handler's error): every GPU stops
        stop = true;
      }
    }
    lock.lock();
  }
  lock.unlock();
  runner.join();
  if (failure) std::rethrow_exception(failure);
  return std::move(*out);
}

}  // namespace

py::object measure_on_devices(const measure_arguments& a) {
  if (!a.feeds.is_none() || !a.setup.is_none() || !a.teardown.is_none() || a.device ||
      a.stream != 0) {
    throw invalid_argument(
        "devices= goes without device=, stream=, setup=, teardown= and feeds: each GPU's "
        "callable comes from workload(device) (docs/python.md, \"Several GPUs\")");
  }
  const bool is_callable = PyCallable_Check(a.workload.ptr()) != 0;
  if (!is_callable && !py::isinstance<py::str>(a.workload)) {
    throw invalid_argument(
        "with devices=, measure() takes a workload name or a callable make(device) that returns "
        "the callable running one inference on that GPU");
  }
  const auto release =
      measure::parse_context_release(a.release.value_or(is_callable ? "keep" : "reset"));
  const bool resets = release == measure::context_release::reset;
  check_common(a, resets);
  const measure::protocol_options o = measure::options_from(a.protocol, resets);
  const std::vector<int> ordinals = resolve(a.devices);

  std::map<int, gpu_calls> calls;
  for (int ordinal : ordinals) calls[ordinal];
  std::atomic<bool> stop{false};
  const std::function<bool()> stopped = [&stop] { return stop.load(); };
  // What the progress callable raised first (touched with the GIL only): raised again at the
  // end, as for one GPU, rather than reported as an interruption.
  std::optional<py::error_already_set> progress_raised;
  measure::device_progress_fn progress;
  if (!a.progress.is_none()) {
    progress = [&a, &stop, &progress_raised](int ordinal, const std::string& line) {
      py::gil_scoped_acquire gil;
      try {
        a.progress(fmt::format("GPU {}: {}", ordinal, line));
      } catch (py::error_already_set& e) {
        if (!progress_raised && !e.matches(PyExc_KeyboardInterrupt)) {
          progress_raised.emplace(std::move(e));
        }
        stop = true;  // the progress callable failed: every GPU stops
      }
    };
  }
  const auto make = job_factory(a, calls, is_callable, release, stopped);
  py::object out = py::cast(multi_result_py(run_watched(ordinals, make, o, progress, stop)));
  const auto& raw = out.cast<const multi_result_py&>().raw();
  if (progress_raised) {
    py::error_already_set e = std::move(*progress_raised);
    progress_raised.reset();
    py::object value = e.value();
    if (py::hasattr(value, "add_note")) {
      value.attr("add_note")("coolbench.measure stopped every GPU at this exception of progress=");
    }
    throw e;
  }
  if (stop) {
    py::object e = exceptions().interrupted(
        "coolbench.measure: interrupted; the .result attribute holds what was measured");
    e.attr("result") = out;
    raise(e);
  }
  if (a.check && raw.failures() > 0) {
    py::object e = exceptions().run_incomplete(fmt::format(
        "coolbench.measure: {} of {} GPUs failed (the .result attribute holds every GPU's "
        "result; .failures says what went wrong)",
        raw.failures(), raw.runs.size()));
    e.attr("result") = out;
    raise(e);
  }
  return out;
}

void bind_devices(py::module_& m) {
  py::class_<multi_result_py>(m, "MultiResult",
                              "What coolbench.measure(devices=...) measured: a Result per GPU "
                              "and the spread across GPUs of one model.")
      .def_property_readonly("results", &multi_result_py::results,
                             "{ordinal: Result} for every GPU that measured something")
      .def_property_readonly("failures", &multi_result_py::failures,
                             "{ordinal: what went wrong} for the GPUs that failed")
      .def_property_readonly("figures_ms", &multi_result_py::figures_ms,
                             "{ordinal: figure in ms, or None where the GPU failed}")
      .def_property_readonly(
          "spread",
          [](const multi_result_py& r) {
            return json_to_python(report::multi_to_json(r.raw())["spread"]);
          },
          "Per GPU model: min_ms, max_ms, mean_ms, max_over_min (max/min - 1), fastest, "
          "slowest, gpus[] (ordinal, figure_ms, vs_mean)")
      .def_property_readonly("complete",
                             [](const multi_result_py& r) { return r.raw().failures() == 0; })
      .def("__getitem__",
           [](const multi_result_py& r, int ordinal) {
             for (const auto& d : r.raw().runs) {
               if (d.ordinal == ordinal && d.result) return result(*d.result);
             }
             throw py::key_error("no result for GPU " + std::to_string(ordinal));
           })
      .def("__len__", [](const multi_result_py& r) { return r.raw().runs.size(); })
      .def(
          "to_dict",
          [](const multi_result_py& r) { return json_to_python(report::multi_to_json(r.raw())); },
          "The document `coolbench run --device all --json` writes (docs/run-json.md)")
      .def("to_json",
           [](const multi_result_py& r) { return report::multi_to_json(r.raw()).dump(1); })
      .def("summary",
           [](const multi_result_py& r) { return report::format_multi_summary(r.raw()); })
      .def(
          "write_json",
          [](const multi_result_py& r, const std::string& path) {
            report::write_text_atomically(path, report::multi_to_json(r.raw()).dump(1) + "\n");
          },
          py::arg("path"))
      .def("__repr__", &multi_result_py::repr);
}

}  // namespace coolbench::python
