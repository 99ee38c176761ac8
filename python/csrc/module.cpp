// sgmcmc._C: the core library's samplers, prior, schedules, diagnostics, metrics and trainer for
// Python (python/sgmcmc/). A thin layer: every rule runs in the same C++ the binary runs; this file
// only converts arguments. The Python classes on top (python/sgmcmc/optim.py, ...) hold the
// torch.optim interface.
#include <torch/extension.h>

#include <pybind11/functional.h>
#include <pybind11/stl.h>

#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "compat.h"
#include "core/option_map.h"
#include "metrics/convergence.h"
#include "metrics/predictive_metrics.h"
#include "priors/gaussian_prior.h"
#include "samplers/registry.h"
#include "samplers/schedules.h"
#include "runtime/cpu.h"
#include "train/lr_pilot.h"
// Built with SGMCMC_PYTHON_ONLY (CMakeLists.txt), the module links the samplers' part of the core alone:
// no trainer, so no sgmcmc._C.train (python/sgmcmc/run.py says so).
#if !SGMCMC_PYTHON_ONLY
#include "config/experiment_config.h"
#include "train/trainer.h"
#endif

namespace py = pybind11;

namespace sgmcmc {
namespace {

OptionMap option_map(const std::string& context, const std::map<std::string, std::string>& values) {
  OptionMap o(context);
  for (const auto& [k, v] : values) o.set(k, v);
  return o;
}

torch::Device device_of(const std::vector<std::vector<torch::Tensor>>& groups) {
  for (const auto& g : groups)
    for (const auto& p : g) return p.device();
  throw std::invalid_argument("an optimizer needs at least one parameter");
}

std::string archive_bytes(const std::function<void(torch::serialize::OutputArchive&)>& write) {
  torch::serialize::OutputArchive ar;
  write(ar);
  std::ostringstream os;
  ar.save_to(os);
  return os.str();
}

void read_archive(const std::string& bytes, const std::function<void(torch::serialize::InputArchive&)>& read) {
  torch::serialize::InputArchive ar;
  ar.load_from(bytes.data(), bytes.size());
  read(ar);
}

// One sampler (or optimizer) of the registry over the user's parameter groups, with its own
// generator. Group g's lr is lr() · scale_g; the prior's precision λ_g (0: none) is added to ∇Ũ
// inside the fused step where the groups are flat, and into .grad otherwise.
class PySampler {
 public:
  // `generator`: the user's torch.Generator (shared: the step's draws advance it), else a Philox
  // generator of the parameters' device seeded with `seed`, as the binary makes its own.
  PySampler(const std::string& name, std::vector<std::vector<torch::Tensor>> groups,
            const std::map<std::string, std::string>& options, uint64_t seed, std::optional<at::Generator> generator)
      : generator_(generator ? *generator : compat::make_generator(device_of(groups), seed)) {
    if (generator_.device().type() != device_of(groups).type())
      throw std::invalid_argument("the generator is on " + generator_.device().str() + ", the parameters on " +
                                  device_of(groups).str());
    std::vector<ParamGroup> pg;
    for (auto& g : groups) {
      for (auto& p : g)
        if (!p.requires_grad()) throw std::invalid_argument("a parameter does not require grad");
      pg.emplace_back(std::move(g));
    }
    sampler_ = make_sampler(name, std::move(pg), option_map(name, options), generator_);
    for (const auto& group : sampler_->param_groups()) {
      int64_t n = 0;
      for (const auto& p : group.params) n += p.numel();
      numels_.push_back(n);
    }
  }

  // lrs[g]: group g's step size; lambdas[g]: its prior precision (0: no prior term).
  void set_groups(const std::vector<double>& lrs, const std::vector<double>& lambdas) {
    const auto& groups = sampler_->param_groups();
    if (lrs.size() != groups.size() || lambdas.size() != groups.size())
      throw std::invalid_argument("one lr and one prior precision per param group");
    if (!(lrs[0] > 0)) throw std::invalid_argument("param group 0: lr must be > 0, got " + std::to_string(lrs[0]));
    sampler_->set_lr(lrs[0]);
    for (size_t g = 0; g < groups.size(); ++g) {
      sampler_->set_lr_scale(g, lrs[g] / lrs[0]);
      if (!(lambdas[g] >= 0) || !std::isfinite(lambdas[g]))
        throw std::invalid_argument("param group " + std::to_string(g) + ": prior_precision must be a finite number >= 0");
    }
    lambdas_ = lambdas;
  }

  void step() {
    add_prior();
    sampler_->step();
  }

  // HMC-type samplers evaluate the gradient several times a step: the user's closure returns the
  // likelihood's Ũ with ∇ in .grad; the prior's term and gradient are added to each evaluation.
  double step_closure(const std::function<torch::Tensor()>& user) {
    auto closure = [&]() -> torch::Tensor {
      torch::Tensor u;
      {
        py::gil_scoped_acquire gil;
        u = user();
      }
      if (!u.defined()) throw std::invalid_argument("the closure returned no loss");
      torch::NoGradGuard no_grad;
      u = u.detach().to(torch::kFloat64);
      size_t g = 0;
      for (const auto& group : sampler_->param_groups()) {
        const double lambda = g < lambdas_.size() ? lambdas_[g] : 0.0;
        ++g;
        if (lambda == 0) continue;
        for (auto p : group.params) {
          auto& grad = p.mutable_grad();
          if (!grad.defined()) grad = torch::zeros_like(p);
          grad.add_(p.detach(), lambda);
          u = u + 0.5 * lambda * p.detach().to(torch::kFloat64).pow(2).sum();
        }
      }
      return u;
    };
    py::gil_scoped_release release;
    return sampler_->step(closure).item<double>();
  }

  void zero_grad() { sampler_->zero_grad(); }
  std::string name() const { return sampler_->name(); }
  bool is_sampler() const { return sampler_->is_sampler(); }
  bool runs_at_zero_temperature() const { return sampler_->runs_at_zero_temperature(); }
  bool flat() const { return sampler_->flat(); }
  bool fused() const { return sampler_->fused(); }
  void set_fused(bool on) { sampler_->set_fused(on); }
  int64_t steps() const { return sampler_->steps(); }
  double temperature() const { return sampler_->temperature(); }
  void set_temperature(double t) { sampler_->set_temperature(t); }
  // Sampler::gradient_noise_ratio of every group, given each group's per-coordinate variance of ∇Ũ's
  // minibatch noise (flat, the group's parameters in order).
  std::vector<double> gradient_noise_ratios(const std::vector<torch::Tensor>& variances) const {
    if (variances.size() != sampler_->param_groups().size())
      throw std::invalid_argument("gradient_noise_ratios: one variance tensor per parameter group");
    std::vector<double> out;
    for (size_t g = 0; g < variances.size(); ++g)
      out.push_back(sampler_->gradient_noise_ratio(g, variances[g].detach().reshape(-1)));
    return out;
  }
  std::map<std::string, double> diagnostics() const { return sampler_->diagnostics(); }

  // The chain's whole state: step count, lr, temperature, every state tensor and the generator.
  py::bytes state() const {
    return py::bytes(archive_bytes([&](torch::serialize::OutputArchive& ar) {
      sampler_->save(ar);
      ar.write("generator", compat::generator_state(generator_), /*is_buffer=*/true);
    }));
  }
  void load_state(const std::string& bytes) {
    read_archive(bytes, [&](torch::serialize::InputArchive& ar) {
      sampler_->load(ar);
      torch::Tensor g;
      ar.read("generator", g, /*is_buffer=*/true);
      compat::set_generator_state(generator_, g);
    });
  }

 private:
  void add_prior() {
    const auto& groups = sampler_->param_groups();
    bool any = false;
    for (double l : lambdas_) any = any || l != 0;
    if (!any) return;
    // Folded into the fused kernel where the step is one (what graph_capturable() checks); the
    // samplers whose step is ATen ops per parameter read .grad only.
    if (sampler_->graph_capturable()) {
      std::vector<kernels::PriorFold> fold(groups.size());
      for (size_t g = 0; g < groups.size(); ++g) {
        if (lambdas_[g] != 0) fold[g].push_back({0, numels_[g], lambdas_[g]});
      }
      sampler_->fold_prior_into_next_step(fold);
      return;
    }
    torch::NoGradGuard no_grad;
    for (size_t g = 0; g < groups.size(); ++g) {
      if (lambdas_[g] == 0) continue;
      for (auto p : groups[g].params) {
        auto& grad = p.mutable_grad();
        if (!grad.defined()) grad = torch::zeros_like(p);
        grad.add_(p.detach().mul(lambdas_[g]));  // g + (λθ), as the fused kernel rounds
      }
    }
  }

  at::Generator generator_;
  SamplerPtr sampler_;
  std::vector<double> lambdas_;
  std::vector<int64_t> numels_;  // elements per group (the prior fold's segment)
};

// The Gaussian prior with Gamma hyperpriors over the user's groups (priors/gaussian_prior.h).
class PyPrior {
 public:
  PyPrior(std::vector<std::vector<torch::Tensor>> groups, std::vector<std::string> names, double precision,
          bool learn, double alpha, double beta, uint64_t seed)
      : generator_(compat::make_generator(device_of(groups), seed)) {
    if (names.size() != groups.size()) throw std::invalid_argument("one name per prior group");
    std::vector<PriorGroup> pg;
    for (size_t g = 0; g < groups.size(); ++g) {
      PriorGroup group;
      group.name = names[g];
      group.params = std::move(groups[g]);
      pg.push_back(std::move(group));
    }
    prior_ = std::make_unique<GaussianPrior>(std::move(pg), precision, learn, alpha, beta);
  }
  void gibbs_step() {
    py::gil_scoped_release release;
    prior_->gibbs_step(generator_);
  }
  void initialize(const std::string& how) { prior_->initialize(how, generator_); }
  std::vector<double> precisions() const { return prior_->precisions(); }
  void set_precisions(const std::vector<double>& l) { prior_->set_precisions(l); }
  torch::Tensor neg_log_prob() const { return prior_->neg_log_prob(); }
  void add_grad() const { prior_->add_grad(); }
  bool learned() const { return prior_->learned(); }
  py::bytes generator_state() const {
    return py::bytes(archive_bytes([&](torch::serialize::OutputArchive& ar) {
      ar.write("generator", compat::generator_state(generator_), true);
    }));
  }
  void set_generator_state(const std::string& bytes) {
    read_archive(bytes, [&](torch::serialize::InputArchive& ar) {
      torch::Tensor g;
      ar.read("generator", g, true);
      compat::set_generator_state(generator_, g);
    });
  }

 private:
  at::Generator generator_;
  std::unique_ptr<GaussianPrior> prior_;
};

PredictiveSummary summary_of(const torch::Tensor& mean, const std::optional<torch::Tensor>& expected_entropy,
                             const std::optional<torch::Tensor>& variance) {
  PredictiveSummary s;
  s.mean = mean;
  if (expected_entropy) s.expected_entropy = *expected_entropy;
  if (variance) s.variance = *variance;
  return s;
}

#if !SGMCMC_PYTHON_ONLY
struct TrainResult {
  std::string run_dir;
  std::map<std::string, double> values;
  bool finished = false;
  bool worse_than_trivial = false;
  std::string health_message;
};

TrainResult train(const std::string& yaml_text, const std::string& source, const std::vector<std::string>& overrides,
                  const std::string& out_dir, bool overwrite, bool resume, bool quiet) {
  RawConfig raw = parse_raw_config(yaml_text, source);
  RunOptions ro;
  for (const auto& o : overrides) {
    apply_override(raw, o);
    ro.set_keys.push_back(o.substr(0, o.find('=')));
  }
  ExperimentConfig config = build_config(std::move(raw));
  ro.out_dir = out_dir;
  ro.overwrite = overwrite;
  ro.resume = resume;
  ro.quiet = quiet;
  RunSummary s;
  // The run flushes denormals when its config says so (train.flush_denormal); the caller's process
  // gets its own setting back afterwards.
  const bool flushing = flush_denormal_on();
  {
    py::gil_scoped_release release;
    try {
      s = run_training(config, ro);
    } catch (...) {
      set_flush_denormal(flushing);
      throw;
    }
  }
  set_flush_denormal(flushing);
  return {s.run_dir, s.values, s.finished, s.worse_than_trivial, s.health_message};
}
#endif

}  // namespace
}  // namespace sgmcmc

PYBIND11_MODULE(_C, m) {
  using namespace sgmcmc;
  m.doc() = "sgmcmc's C++ core (samplers, prior, schedules, diagnostics, trainer); use the sgmcmc package";

  m.def("sampler_registry", [] {
    std::vector<std::tuple<std::string, bool, std::string, std::vector<std::string>>> out;
    for (const auto& e : sampler_registry()) out.emplace_back(e.name, e.is_sampler, e.summary, e.keys);
    return out;
  }, "(name, is_sampler, summary, option keys) of every sampler and optimizer");

  // Each sampler's option table (src/samplers/<name>.cpp) and traits, from which python/sgmcmc/optim.py
  // builds the classes' signatures and docstrings: the defaults and meanings are stated once, in C++.
  m.def("sampler_info", [] {
    py::dict out;
    for (const auto& e : sampler_registry()) {
      py::list options;
      for (const auto& d : e.options) {
        py::dict o;
        o["key"] = d.key;
        o["type"] = d.type;
        o["default"] = d.default_text;
        o["meaning"] = d.meaning;
        o["choices"] = d.choices;
        o["range"] = d.range;
        options.append(o);
      }
      py::dict info;
      info["is_sampler"] = e.is_sampler;
      info["summary"] = e.summary;
      info["keys"] = e.keys;
      info["options"] = options;
      info["lr_per_datum"] = e.lr_per_datum;
      info["chains"] = e.chains;
      info["zero_temperature"] = e.zero_temperature;
      info["needs_closure"] = e.needs_closure;
      out[py::str(e.name)] = info;
    }
    return out;
  }, "name -> {is_sampler, summary, keys, options: [{key, type, default, meaning, choices, range}], "
     "lr_per_datum, chains, zero_temperature, needs_closure} of every sampler and optimizer");

  py::class_<PySampler>(m, "Sampler")
      .def(py::init<const std::string&, std::vector<std::vector<torch::Tensor>>,
                    const std::map<std::string, std::string>&, uint64_t, std::optional<at::Generator>>(),
           py::arg("name"), py::arg("groups"), py::arg("options"), py::arg("seed"), py::arg("generator") = py::none())
      .def("set_groups", &PySampler::set_groups, py::arg("lrs"), py::arg("prior_precisions"))
      .def("step", &PySampler::step, py::call_guard<py::gil_scoped_release>())
      .def("step_closure", &PySampler::step_closure, py::arg("closure"))
      .def("zero_grad", &PySampler::zero_grad)
      .def_property_readonly("name", &PySampler::name)
      .def_property_readonly("is_sampler", &PySampler::is_sampler)
      .def_property_readonly("runs_at_zero_temperature", &PySampler::runs_at_zero_temperature)
      .def_property_readonly("flat", &PySampler::flat)
      .def_property("fused", &PySampler::fused, &PySampler::set_fused)
      .def_property_readonly("steps", &PySampler::steps)
      .def_property("temperature", &PySampler::temperature, &PySampler::set_temperature)
      .def("diagnostics", &PySampler::diagnostics)
      .def("gradient_noise_ratios", &PySampler::gradient_noise_ratios, py::arg("variances"))
      .def("state", &PySampler::state)
      .def("load_state", &PySampler::load_state, py::arg("state"));

  py::class_<PyPrior>(m, "GaussianPrior")
      .def(py::init<std::vector<std::vector<torch::Tensor>>, std::vector<std::string>, double, bool, double, double,
                    uint64_t>(),
           py::arg("groups"), py::arg("names"), py::arg("precision"), py::arg("learn"), py::arg("alpha"),
           py::arg("beta"), py::arg("seed"))
      .def("gibbs_step", &PyPrior::gibbs_step)
      .def("initialize", &PyPrior::initialize, py::arg("how"))
      .def_property("precisions", &PyPrior::precisions, &PyPrior::set_precisions)
      .def("neg_log_prob", &PyPrior::neg_log_prob)
      .def("add_grad", &PyPrior::add_grad)
      .def_property_readonly("learned", &PyPrior::learned)
      .def("generator_state", &PyPrior::generator_state)
      .def("set_generator_state", &PyPrior::set_generator_state, py::arg("state"));

  py::class_<Schedule>(m, "Schedule")
      .def("at", &Schedule::at, py::arg("t"))
      .def("sampling", &Schedule::sampling, py::arg("t"))
      .def_property_readonly("has_stages", &Schedule::has_stages)
      .def("describe", &Schedule::describe);
  m.def("make_schedule",
        [](const std::map<std::string, std::string>& options, double base, int64_t total_steps, int64_t steps_per_epoch) {
          return make_schedule(option_map("schedule", options), base, total_steps, steps_per_epoch);
        },
        py::arg("options"), py::arg("base"), py::arg("total_steps"), py::arg("steps_per_epoch"));

  m.def("split_rhat", &split_rhat, py::arg("draws"));
  m.def("effective_sample_size", &effective_sample_size, py::arg("draws"));

  m.def("predictive_metrics",
        [](const torch::Tensor& mean, const torch::Tensor& targets, bool classification, double tau,
           std::optional<torch::Tensor> expected_entropy, std::optional<torch::Tensor> variance) {
          return predictive_metrics(summary_of(mean, expected_entropy, variance), targets, classification, tau);
        },
        py::arg("mean"), py::arg("targets"), py::arg("classification"), py::arg("tau") = 1.0,
        py::arg("expected_entropy") = py::none(), py::arg("variance") = py::none());
  m.def("entropy", &entropy_of, py::arg("probs"), "H(p) per row of probabilities [n, K]");
  m.def("ood_metrics",
        [](const torch::Tensor& in_mean, std::optional<torch::Tensor> in_ee, const torch::Tensor& ood_mean,
           std::optional<torch::Tensor> ood_ee) {
          return ood_metrics(summary_of(in_mean, in_ee, std::nullopt), summary_of(ood_mean, ood_ee, std::nullopt));
        },
        py::arg("in_mean"), py::arg("in_expected_entropy"), py::arg("ood_mean"), py::arg("ood_expected_entropy"));

  // lr auto over trials the caller runs (python/sgmcmc/lr_pilot.py: the user's own steps): trial(lr) returns
  // (the NLL per validation point [n], or None where the trial was unstable; the gradient-noise ratio or NaN).
  // The search, the choice and its record are the binary's (train/lr_pilot.h); the choice as JSON text.
  m.def("search_lr",
        [](double centre, int64_t steps, const std::function<py::object(double)>& trial,
           const std::function<void(const std::string&)>& say) {
          auto run = [&](double lr) {
            const py::object r = trial(lr);
            LrTrial t;
            t.lr = lr;
            const py::tuple pair = r.cast<py::tuple>();
            if (!pair[0].is_none()) {
              const auto points = pair[0].cast<torch::Tensor>().detach().to(torch::kCPU, torch::kFloat64).reshape(-1);
              const double nll = points.numel() > 0 ? points.mean().item<double>() : NAN;
              if (std::isfinite(nll)) {
                t.points = points;
                t.val_nll = nll;
                t.stable = true;
              }
            }
            t.noise_ratio = pair[1].cast<double>();
            return t;
          };
          return search_lr(centre, steps, run, say).to_json().dump();
        },
        py::arg("centre"), py::arg("steps"), py::arg("trial"), py::arg("say") = py::none());
  m.def("pilot_steps", &pilot_steps, py::arg("total_steps"),
        "the steps of one lr trial for a run of total_steps: a fiftieth, 100 to 1,000");

#if !SGMCMC_PYTHON_ONLY
  py::class_<TrainResult>(m, "TrainResult")
      .def_readonly("run_dir", &TrainResult::run_dir)
      .def_readonly("values", &TrainResult::values)
      .def_readonly("finished", &TrainResult::finished)
      .def_readonly("worse_than_trivial", &TrainResult::worse_than_trivial)
      .def_readonly("health_message", &TrainResult::health_message);
  m.def("train", &train, py::arg("yaml_text"), py::arg("source"), py::arg("overrides"), py::arg("out_dir"),
        py::arg("overwrite"), py::arg("resume"), py::arg("quiet"));
#endif
}
