#include "simulate/experiments.h"

#include "core/json_file.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>
#include <iomanip>
#include <sstream>
#include <stdexcept>

#include "compat.h"
#include "core/option_map.h"
#include "samplers/registry.h"
#include "simulate/targets.h"

namespace sgmcmc::sim {
namespace {

namespace fs = std::filesystem;

OptionMap options_of(const std::map<std::string, std::string>& kv) {
  OptionMap o("sampler");
  for (const auto& [k, v] : kv) o.set(k, v);
  return o;
}

std::string num(double v) {
  std::ostringstream s;
  s << std::setprecision(10) << v;
  return s.str();
}

int64_t scaled(int64_t steps, double scale, int64_t minimum = 10) {
  return std::max<int64_t>(minimum, static_cast<int64_t>(std::llround(steps * scale)));
}

// A chain (or a batch of independent chains, one per leading index) driven by a sampler on a
// synthetic target with additive Gaussian gradient noise of standard deviation `noise_std`.
class Chain {
 public:
  Chain(const Target& target, torch::Tensor init, const std::string& sampler,
        std::map<std::string, std::string> opts, double noise_std, uint64_t seed)
      : target_(target), noise_std_(noise_std), noise_gen_(compat::make_generator(torch::kCPU, seed ^ 0x9e3779b97f4a7c15ULL)) {
    theta_ = init.clone().to(torch::kFloat64).set_requires_grad(true);
    theta_.mutable_grad() = torch::zeros_like(theta_);
    sampler_ = make_sampler(sampler, {ParamGroup({theta_})}, options_of(opts),
                            compat::make_generator(torch::kCPU, seed));
  }

  // One step; for samplers that need a closure (HMC) the closure gives the exact gradient.
  void step() {
    if (sampler_->name() == "hmc") {
      sampler_->step([this] {
        torch::NoGradGuard g;
        theta_.mutable_grad().copy_(target_.grad(theta_));
        return target_.energy(theta_).sum();
      });
      return;
    }
    {
      torch::NoGradGuard g;
      auto grad = target_.grad(theta_);
      if (noise_std_ > 0) grad.add_(at::randn(theta_.sizes(), noise_gen_, theta_.options()), noise_std_);
      theta_.mutable_grad().copy_(grad);
    }
    sampler_->step();
  }

  torch::Tensor value() const { return theta_.detach(); }
  Sampler& sampler() { return *sampler_; }

 private:
  const Target& target_;
  double noise_std_;
  at::Generator noise_gen_;
  torch::Tensor theta_;
  SamplerPtr sampler_;
};

// Runs `steps` steps, keeping every state after `burn` (stacked along a new trailing-step dim).
torch::Tensor run(Chain& chain, int64_t steps, int64_t burn) {
  std::vector<torch::Tensor> kept;
  kept.reserve(static_cast<size_t>(std::max<int64_t>(0, steps - burn)));
  for (int64_t t = 0; t < steps; ++t) {
    chain.step();
    if (t >= burn) kept.push_back(chain.value().clone());
  }
  return torch::stack(kept, 1);  // [chains, kept, ...]
}

void write_csv(const fs::path& path, const std::string& header,
               const std::vector<std::vector<std::string>>& rows) {
  std::ofstream f(path);
  if (!f) throw std::runtime_error(path.string() + ": cannot write");
  f << header << "\n";
  for (const auto& r : rows) {
    for (size_t i = 0; i < r.size(); ++i) f << (i ? "," : "") << r[i];
    f << "\n";
  }
}

// ---------------------------------------------------------------------------------------------
// 000 Fig. 3: correlated 2-D Gaussian, ∇Ũ = Σ⁻¹θ + N(0, I).

struct GaussSpec {
  std::string label, sampler;
  std::map<std::string, std::string> opts;
};

// The sample covariance of s: [chains, kept, 2].
torch::Tensor cov_of(const torch::Tensor& s) {
  auto x = s.reshape({-1, 2});
  auto c = x - x.mean(0, true);
  return c.t().mm(c) / static_cast<double>(x.size(0) - 1);
}

// The Gaussian experiments' common setup: 100 chains from 0 on the correlated target.
struct GaussSetup {
  Target target = gaussian2d(0.9);
  int64_t chains = 100, steps = 0, burn = 0;
  torch::Tensor true_cov = torch::tensor({{1.0, 0.9}, {0.9, 1.0}}, torch::kFloat64);
  torch::Tensor init = torch::zeros({chains, 2}, torch::kFloat64);
};

// Every sampler at one moderate step size: gaussian2d_samplers.csv. SGHMC-family step sizes are in
// their own units (η = ε² for SGHMC, h for the thermostats); the values give comparable accuracy.
void gaussian2d_samplers(const GaussSetup& g, uint64_t& seed, const fs::path& dir, ExperimentResult& res) {
  const std::string after_steps = std::to_string(g.steps + 1);
  std::vector<GaussSpec> specs = {
      {"sgld", "sgld", {{"lr", "0.01"}}},
      {"psgld", "psgld", {{"lr", "0.01"}, {"alpha", "0.999"}}},
      {"sghmc-euler", "sghmc", {{"lr", "0.01"}, {"alpha", "0.1"}, {"noise_estimate", "constant"}, {"beta_hat", "0.005"}}},
      {"sghmc-ssi", "sghmc", {{"lr", "0.01"}, {"alpha", "0.1"}, {"noise_estimate", "constant"}, {"beta_hat", "0.005"}, {"integrator", "ssi"}}},
      {"sghmc-fisher", "sghmc", {{"lr", "0.01"}, {"alpha", "0.1"}, {"noise_estimate", "fisher"}}},
      {"sgnht", "sgnht", {{"lr", "0.1"}, {"diffusion", "1"}}},
      {"msgnht-euler", "msgnht", {{"lr", "0.1"}, {"diffusion", "1"}}},
      {"msgnht-ssi", "msgnht", {{"lr", "0.1"}, {"diffusion", "1"}, {"integrator", "ssi"}}},
      {"santa-euler", "santa", {{"lr", "0.01"}, {"eps", "16"}, {"data_size", "0.25"}, {"anneal_gamma", "0"}, {"anneal_a", "1"}, {"burnin", after_steps}}},
      {"santa-ssi", "santa", {{"lr", "0.01"}, {"anneal_gamma", "0"}, {"anneal_a", "1"}, {"burnin", after_steps}, {"integrator", "ssi"}}},
  };
  std::vector<std::vector<std::string>> rows;
  for (const auto& spec : specs) {
    Chain chain(g.target, g.init, spec.sampler, spec.opts, 1.0, seed++);
    auto s = run(chain, g.steps, g.burn);
    auto cov = cov_of(s);
    auto mean = s.reshape({-1, 2}).mean(0);
    double cov_err = (cov - g.true_cov).abs().mean().item<double>();
    double tau = autocorrelation_time(s.select(2, 0));
    rows.push_back({spec.label, num(mean[0].item<double>()), num(mean[1].item<double>()),
                    num(cov[0][0].item<double>()), num(cov[0][1].item<double>()),
                    num(cov[1][1].item<double>()), num(cov_err), num(tau)});
    res.metrics[spec.label + ".cov_abs_error"] = cov_err;
    res.metrics[spec.label + ".autocorr_time"] = tau;
  }
  write_csv(dir / "gaussian2d_samplers.csv", "sampler,mean0,mean1,cov00,cov01,cov11,cov_abs_error,autocorr_time", rows);
  res.files.push_back("gaussian2d_samplers.csv");
}

// Fig. 3 left: covariance error vs autocorrelation time over 5 step sizes ε. SGHMC in SGD form
// with η = ε², α = ε·C (C = 1), β̂ = ηV/2 (V = 1, the known gradient-noise variance); SGLD with
// lr = ε², which is SGHMC with the same η and full friction α = 1.
void gaussian2d_stepsizes(const GaussSetup& g, uint64_t& seed, const fs::path& dir, ExperimentResult& res) {
  std::vector<std::vector<std::string>> rows, first50;
  const double hs[] = {0.025, 0.05, 0.1, 0.15, 0.2};
  for (double h : hs) {
    for (const std::string which : {"sgld", "sghmc"}) {
      std::map<std::string, std::string> opts;
      if (which == "sgld") {
        opts = {{"lr", num(h * h)}};  // = SGHMC with η = ε² and full friction α = 1
      } else {
        opts = {{"lr", num(h * h)}, {"alpha", num(h)}, {"noise_estimate", "constant"}, {"beta_hat", num(h * h / 2)}};
      }
      Chain chain(g.target, g.init, which, opts, 1.0, seed++);
      auto s = run(chain, g.steps, g.burn);
      double cov_err = (cov_of(s) - g.true_cov).abs().mean().item<double>();
      double tau = autocorrelation_time(s.select(2, 0));
      rows.push_back({which, num(h), opts["lr"], num(cov_err), num(tau)});
      if (h == 0.1) {
        auto c0 = s.select(0, 0);
        for (int64_t i = 0; i < std::min<int64_t>(50, c0.size(0)); ++i)
          first50.push_back({which, std::to_string(i), num(c0[i][0].item<double>()), num(c0[i][1].item<double>())});
      }
    }
  }
  write_csv(dir / "gaussian2d_stepsizes.csv", "sampler,epsilon,lr,cov_abs_error,autocorr_time", rows);
  write_csv(dir / "gaussian2d_first50.csv", "sampler,index,theta0,theta1", first50);
  res.files.push_back("gaussian2d_stepsizes.csv");
  res.files.push_back("gaussian2d_first50.csv");
}

ExperimentResult gaussian2d_experiment(const SimulateOptions& o, const fs::path& dir) {
  ExperimentResult res{"gaussian2d", {}, {}};
  GaussSetup g;
  g.steps = scaled(10000, o.scale, 400);
  g.burn = g.steps / 10;
  uint64_t seed = o.seed;  // one seed per chain batch, in order across both parts
  gaussian2d_samplers(g, seed, dir, res);
  gaussian2d_stepsizes(g, seed, dir, res);
  res.metrics["steps"] = static_cast<double>(g.steps);
  res.metrics["chains"] = static_cast<double>(g.chains);
  return res;
}

// ---------------------------------------------------------------------------------------------
// 000 Fig. 1: U = −2θ² + θ⁴, ∇Ũ = ∇U + N(0, 4), ε = 0.1.

ExperimentResult fig1_experiment(const SimulateOptions& o, const fs::path& dir) {
  ExperimentResult res{"fig1", {}, {}};
  const Target target = fig1_quartic();
  const int64_t bins = 50, chains = 100;
  const int64_t steps = scaled(20000, o.scale, 400), burn = steps / 10;
  const double eps = 0.1, noise_std = 2.0, V = 4.0;
  auto truth = bin_probabilities(target, bins);
  auto init = torch::zeros({chains}, torch::kFloat64);

  std::map<std::string, torch::Tensor> hists;
  // SGHMC in SGD form: η = ε², α = εC with C = 1, β̂ = ηV/2 (the known noise, App. G).
  {
    Chain c(target, init, "sghmc",
            {{"lr", num(eps * eps)}, {"alpha", num(eps)}, {"noise_estimate", "constant"}, {"beta_hat", num(eps * eps * V / 2)}},
            noise_std, o.seed);
    hists["sghmc"] = histogram(run(c, steps, burn), target.lo, target.hi, bins);
  }
  // Naive SGHMC: no friction, momentum resampled every 50 steps (as in the figure).
  {
    Chain c(target, init, "sghmc-naive", {{"lr", num(eps * eps)}, {"resample_every", "50"}}, noise_std, o.seed + 1);
    hists["naive_sghmc"] = histogram(run(c, steps, burn), target.lo, target.hi, bins);
  }
  // SGLD at the same time step for reference (h = ε²/2 in Langevin time units).
  {
    Chain c(target, init, "sgld", {{"lr", num(eps * eps / 2)}}, noise_std, o.seed + 2);
    hists["sgld"] = histogram(run(c, steps, burn), target.lo, target.hi, bins);
  }
  // Exact HMC with MH, L = 50 leapfrog steps of ε = 0.1 per proposal, one chain.
  {
    const int64_t hmc_steps = scaled(4000, o.scale, 100);
    Chain c(target, torch::zeros({1}, torch::kFloat64), "hmc", {{"lr", num(eps)}, {"leapfrog_steps", "50"}}, 0.0, o.seed + 3);
    hists["hmc"] = histogram(run(c, hmc_steps, hmc_steps / 20), target.lo, target.hi, bins);
    auto d = c.sampler().diagnostics();
    if (d.count("acceptance_rate")) res.metrics["hmc.acceptance_rate"] = d["acceptance_rate"];
  }
  std::vector<std::vector<std::string>> rows;
  double width = (target.hi - target.lo) / bins;
  for (int64_t b = 0; b < bins; ++b) {
    std::vector<std::string> r = {num(target.lo + (b + 0.5) * width), num(truth[b].item<double>() / width)};
    for (const char* k : {"hmc", "sghmc", "naive_sghmc", "sgld"}) r.push_back(num(hists[k][b].item<double>() / width));
    rows.push_back(r);
  }
  write_csv(dir / "fig1_density.csv", "theta,true,hmc,sghmc,naive_sghmc,sgld", rows);
  res.files.push_back("fig1_density.csv");
  for (const auto& [k, h] : hists) {
    res.metrics[k + ".kl"] = kl_divergence(h, truth);
    res.metrics[k + ".tv"] = total_variation(h, truth);
  }
  res.metrics["steps"] = static_cast<double>(steps);
  return res;
}

// ---------------------------------------------------------------------------------------------
// 002 Figs. 1–2: double well, ∇Ũ h = ∇U h + N(0, 2Bh) with B = 1, no injected noise.

ExperimentResult double_well_experiment(const SimulateOptions& o, const fs::path& dir) {
  ExperimentResult res{"double-well", {}, {}};
  const Target target = double_well();
  const int64_t bins = 60, chains = 1000;
  const int64_t steps = scaled(5000, o.scale, 200), burn = steps / 5;
  const double B = 1.0;
  auto truth = bin_probabilities(target, bins);
  auto init = torch::zeros({chains}, torch::kFloat64);
  const double hs[] = {0.001, 0.003, 0.01, 0.03, 0.1, 0.2, 0.3};
  std::vector<std::vector<std::string>> rows, traces;
  std::vector<std::vector<std::string>> samples_rows;
  uint64_t seed = o.seed;
  for (double h : hs) {
    for (const std::string integ : {"euler", "ssi"}) {
      Chain c(target, init, "msgnht", {{"lr", num(h)}, {"diffusion", "0"}, {"xi_init", "1"}, {"integrator", integ}},
              std::sqrt(2 * B / h), seed++);
      std::vector<torch::Tensor> kept;
      bool trace = (h == 0.001 || h == 0.2);
      for (int64_t t = 0; t < steps; ++t) {
        c.step();
        if (t >= burn) kept.push_back(c.value().clone());
        if (trace && t % 10 == 0) {
          traces.push_back({integ, num(h), std::to_string(t), num(c.sampler().diagnostics()["thermostat_mean"])});
        }
      }
      auto s = torch::stack(kept, 1);
      auto hist = histogram(s, target.lo, target.hi, bins);
      double kl = kl_divergence(hist, truth);
      double xi = c.sampler().diagnostics()["thermostat_mean"];
      rows.push_back({integ, num(h), num(kl), num(total_variation(hist, truth)), num(xi)});
      res.metrics["msgnht-" + integ + ".h=" + num(h) + ".kl"] = kl;
      res.metrics["msgnht-" + integ + ".h=" + num(h) + ".thermostat"] = xi;
      if (trace) {
        double width = (target.hi - target.lo) / bins;
        for (int64_t b = 0; b < bins; ++b)
          samples_rows.push_back({integ, num(h), num(target.lo + (b + 0.5) * width),
                                  num(truth[b].item<double>() / width), num(hist[b].item<double>() / width)});
      }
    }
  }
  write_csv(dir / "double_well_kl.csv", "integrator,h,kl,tv,thermostat_final", rows);
  write_csv(dir / "double_well_thermostat.csv", "integrator,h,step,thermostat_mean", traces);
  write_csv(dir / "double_well_density.csv", "integrator,h,theta,true,estimate", samples_rows);
  res.files = {"double_well_kl.csv", "double_well_thermostat.csv", "double_well_density.csv"};
  res.metrics["steps"] = static_cast<double>(steps);
  res.metrics["chains"] = static_cast<double>(chains);
  return res;
}

// ---------------------------------------------------------------------------------------------
// 001's Santa illustration: start near the local mode (θ ≈ 2.22) of the double well; the global
// mode is θ ≈ −2.94. Each of `runs` seeded runs is one element of the parameter tensor (every
// update is elementwise, so the runs are independent).

ExperimentResult santa_experiment(const SimulateOptions& o, const fs::path& dir) {
  ExperimentResult res{"santa-double-well", {}, {}};
  const Target target = double_well();
  const int64_t runs = 50;
  const int64_t steps = scaled(10000, o.scale, 400), burnin = steps / 2;
  const double noise_std = 0.5, start = 2.0, global_mode = -2.9354;
  auto init = torch::full({runs}, start, torch::kFloat64);
  std::vector<std::vector<std::string>> traj;
  std::map<std::string, torch::Tensor> finals;
  const std::vector<std::pair<std::string, std::map<std::string, std::string>>> specs = {
      // Symmetric splitting (the Euler form's thermostat is unstable unless g < 1/2, see santa.h);
      // eps = 4 keeps g ≈ 0.45; slow annealing β_t = 0.5·(t+1)^0.1 (tuned on a small grid, see
      // docs/synthetic.md).
      {"santa", {{"lr", "0.01"}, {"burnin", std::to_string(burnin)}, {"anneal_a", "0.5"}, {"anneal_gamma", "0.1"}, {"sigma", "0.99"}, {"eps", "4"}, {"integrator", "ssi"}}},
      {"rmsprop", {{"lr", "0.01"}, {"alpha", "0.99"}, {"eps", "1e-4"}}},
  };
  for (const auto& [name, opts] : specs) {
    Chain c(target, init, name, opts, noise_std, o.seed);
    for (int64_t t = 0; t < steps; ++t) {
      c.step();
      if (t % 10 == 0) {
        auto v = c.value();
        for (int64_t r = 0; r < 5; ++r) traj.push_back({name, std::to_string(r), std::to_string(t), num(v[r].item<double>())});
      }
    }
    auto v = c.value();
    finals[name] = v;
    double frac = ((v - global_mode).abs() < 0.5).to(torch::kFloat64).mean().item<double>();
    res.metrics[name + ".fraction_at_global_mode"] = frac;
    res.metrics[name + ".mean_final_energy"] = target.energy(v).mean().item<double>();
  }
  write_csv(dir / "santa_trajectories.csv", "optimizer,run,step,theta", traj);
  res.files.push_back("santa_trajectories.csv");
  res.metrics["runs"] = static_cast<double>(runs);
  res.metrics["steps"] = static_cast<double>(steps);
  return res;
}

// ---------------------------------------------------------------------------------------------
// SGNUTS against SGHMC and stochastic HMC (N_l = 10) at equal gradient evaluations over step sizes ε:
// 000 Fig. 3's Gaussian (∇Ũ = Σ⁻¹θ + N(0, 1): covariance error) and Fig. 1's quartic (∇Ũ = ∇U + N(0, 4):
// KL and TV of the histogram), 100 chains each. SGHMC in SGD form with η = ε², α = ε, β̂ = ηV/2; stochastic
// HMC and SGNUTS with leapfrog step ε; SGNUTS adapts on 20 trajectories (within the burn-in, a fifth of the
// steps) and runs its chains one by one (its U-turn criterion covers all of a sampler's parameters).
// sgnuts.csv: target, sampler, epsilon, error, autocorrelation time τ (steps = gradients; 1/τ is the
// effective samples per gradient), SGNUTS's mean trajectory length.

ExperimentResult sgnuts_experiment(const SimulateOptions& o, const fs::path& dir) {
  ExperimentResult res{"sgnuts", {}, {}};
  const int64_t chains = 100, steps = scaled(20000, o.scale, 400), burn = steps / 5;
  uint64_t seed = o.seed;
  std::vector<std::vector<std::string>> rows;
  struct Setup {
    std::string name;
    Target target;
    double noise_var;
    torch::Tensor init;
  };
  const std::vector<Setup> setups = {
      {"gaussian2d", gaussian2d(0.9), 1.0, torch::zeros({chains, 2}, torch::kFloat64)},
      {"fig1", fig1_quartic(), 4.0, torch::zeros({chains}, torch::kFloat64)},
  };
  const torch::Tensor true_cov = torch::tensor({{1.0, 0.9}, {0.9, 1.0}}, torch::kFloat64);
  for (const auto& su : setups) {
    const auto truth = su.name == "fig1" ? bin_probabilities(su.target, 50) : torch::Tensor();
    for (double eps : {0.025, 0.05, 0.1, 0.2}) {
      const std::vector<GaussSpec> specs = {
          {"sghmc", "sghmc", {{"lr", num(eps * eps)}, {"alpha", num(eps)}, {"noise_estimate", "constant"},
                              {"beta_hat", num(eps * eps * su.noise_var / 2)}}},
          {"stochastic-hmc", "stochastic-hmc", {{"lr", num(eps)}, {"leapfrog_steps", "10"}, {"friction", "1"}}},
          {"sgnuts", "sgnuts", {{"lr", num(eps)}, {"adapt_trajectories", "20"}}},
      };
      for (const auto& spec : specs) {
        // SGNUTS's U-turn criterion sums over all of a sampler's parameters: its chains run one by one.
        const int64_t per = spec.sampler == "sgnuts" ? 1 : chains;
        std::vector<torch::Tensor> parts;
        std::map<std::string, double> d;
        for (int64_t c = 0; c < chains; c += per) {
          Chain chain(su.target, su.init.narrow(0, c, per), spec.sampler, spec.opts, std::sqrt(su.noise_var), seed++);
          parts.push_back(run(chain, steps, burn));
          for (const auto& [k, v] : chain.sampler().diagnostics()) d[k] += v * static_cast<double>(per) / chains;
        }
        const auto s = torch::cat(parts, 0);
        double err = 0;
        std::string key = su.name + "." + spec.label + ".eps" + num(eps);
        if (su.name == "fig1") {
          const auto h = histogram(s, su.target.lo, su.target.hi, 50);
          err = kl_divergence(h, truth);
          res.metrics[key + ".tv"] = total_variation(h, truth);
        } else {
          err = (cov_of(s) - true_cov).abs().mean().item<double>();
        }
        const double tau = autocorrelation_time(su.name == "fig1" ? s : s.select(2, 0));
        const double len = d.count("trajectory_length_mean") ? d.at("trajectory_length_mean") : NAN;
        rows.push_back({su.name, spec.label, num(eps), num(err), num(tau), num(len)});
        res.metrics[key + (su.name == "fig1" ? ".kl" : ".cov_abs_error")] = err;
        res.metrics[key + ".autocorr_time"] = tau;
      }
    }
  }
  write_csv(dir / "sgnuts.csv", "target,sampler,epsilon,error,autocorr_time,trajectory_length", rows);
  res.files.push_back("sgnuts.csv");
  res.metrics["steps"] = static_cast<double>(steps);
  return res;
}

}  // namespace

const std::vector<std::pair<std::string, std::string>>& experiment_list() {
  static const std::vector<std::pair<std::string, std::string>> list = {
      {"gaussian2d", "000 Fig. 3: every sampler on a correlated 2-D Gaussian with gradient noise"},
      {"fig1", "000 Fig. 1: HMC, naive SGHMC and SGHMC on U = -2θ² + θ⁴ with noisy gradients"},
      {"double-well", "002 Figs. 1-2: mSGNHT Euler vs symmetric splitting, KL per step size"},
      {"santa-double-well", "001: Santa vs RMSprop started near the double well's local mode"},
      {"sgnuts", "SGNUTS vs SGHMC and stochastic HMC over step sizes on Fig. 3's Gaussian and Fig. 1's quartic"},
  };
  return list;
}

ExperimentResult run_experiment(const std::string& name, const SimulateOptions& options,
                                const fs::path& out_dir) {
  torch::NoGradGuard no_grad;
  if (name == "gaussian2d") return gaussian2d_experiment(options, out_dir);
  if (name == "fig1") return fig1_experiment(options, out_dir);
  if (name == "double-well") return double_well_experiment(options, out_dir);
  if (name == "santa-double-well") return santa_experiment(options, out_dir);
  if (name == "sgnuts") return sgnuts_experiment(options, out_dir);
  std::vector<std::string> names;
  for (const auto& e : experiment_list()) names.push_back(e.first);
  std::string near = nearest(name, names);
  throw std::invalid_argument("unknown experiment '" + name + "'" +
                              (near.empty() ? "" : " (did you mean '" + near + "'?)"));
}

void write_summary_json(const fs::path& path, const SimulateOptions& options,
                        const std::vector<ExperimentResult>& results) {
  // ordered_json keeps today's key order (seed, scale, experiments in run order); metrics are a
  // sorted std::map. Non-finite values are written as null (nlohmann's serializer does that).
  nlohmann::ordered_json experiments = nlohmann::ordered_json::object();
  for (const auto& r : results) experiments[r.name] = r.metrics;
  nlohmann::ordered_json root = {{"seed", options.seed}, {"scale", options.scale}, {"experiments", experiments}};
  write_json_file(path.string(), root);
}

}  // namespace sgmcmc::sim
