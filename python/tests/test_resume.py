"""Resuming through state_dict continues a chain bit for bit: the optimizer (momentum, thermostat,
preconditioner, step count, generator), the prior's Gibbs-sampled precisions and generator, and
the schedule's position, saved with torch.save halfway and loaded into fresh objects."""
import io

import pytest
import torch

import sgmcmc




DATA = torch.Generator().manual_seed(1)
X = torch.randn(64, 5, generator=DATA)
Y = torch.randint(0, 3, (64,), generator=DATA)


def build(cls, options):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(5, 8), torch.nn.Tanh(), torch.nn.Linear(8, 3))
    groups = [{"params": list(model[0].parameters()), "lr": 1e-3},
              {"params": list(model[2].parameters()), "lr": 5e-4}]
    opt = cls(groups, lr=1e-3, seed=42, **options)
    prior = sgmcmc.GaussianPrior(opt, precision=1.0, hyperprior=(1.0, 1.0), seed=43)
    explore = 0.25 if opt.runs_at_zero_temperature else 0.0
    sched = sgmcmc.Schedule(opt, "cyclical", total_steps=40, cycles=2, explore_fraction=explore)
    return model, opt, prior, sched


def advance(model, opt, prior, sched, steps):
    for _ in range(steps):
        opt.zero_grad()
        loss = 64 * torch.nn.functional.cross_entropy(model(X), Y)
        loss.backward()
        opt.step()
        sched.step()
        if opt.steps % 5 == 0:
            prior.gibbs_step()


@pytest.mark.parametrize("cls,options", [
    (sgmcmc.SGHMC, {"alpha": 0.1}),
    (sgmcmc.MSGNHT, {}),
    (sgmcmc.PSGLD, {}),
    (sgmcmc.Santa, {"data_size": 64, "burnin": 20}),
    (sgmcmc.Adam, {}),
])
def test_state_dict_resumes_exactly(cls, options):
    straight = build(cls, options)
    advance(*straight, 40)

    first = build(cls, options)
    advance(*first, 20)
    buf = io.BytesIO()
    model, opt, prior, sched = first
    torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "prior": prior.state_dict(),
                "sched": sched.state_dict()}, buf)
    del first, model, opt, prior, sched
    buf.seek(0)
    saved = torch.load(buf)
    resumed = build(cls, options)
    model, opt, prior, sched = resumed
    model.load_state_dict(saved["model"])
    opt.load_state_dict(saved["opt"])
    prior.load_state_dict(saved["prior"])
    sched.load_state_dict(saved["sched"])
    assert opt.steps == 20
    advance(*resumed, 20)

    for a, b in zip(straight[0].parameters(), resumed[0].parameters()):
        assert torch.equal(a, b)
    assert straight[2].precisions == resumed[2].precisions
    assert straight[1].steps == resumed[1].steps == 40


def test_state_dict_of_another_sampler_is_refused():
    _, opt, _, _ = build(sgmcmc.SGHMC, {})
    _, other, _, _ = build(sgmcmc.SGLD, {})
    with pytest.raises(ValueError, match="sghmc"):
        other.load_state_dict(opt.state_dict())
