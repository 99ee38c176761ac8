"""examples/own_model.ipynb runs from top to bottom: a cell that raises (its own checks included) fails this test.

Needs nbclient, ipykernel, ArviZ and matplotlib (PyPI); without them it is skipped, and scripts/test.sh runs it
again in its virtual environment that has them.
"""
import os

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")
pytest.importorskip("arviz")
pytest.importorskip("matplotlib")

NOTEBOOK = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "own_model.ipynb")


def test_own_model_notebook_executes():
    nb = nbformat.read(NOTEBOOK, as_version=4)
    # the kernel inherits this process's environment (PYTHONPATH: the sgmcmc under test) and runs this Python
    nbclient.NotebookClient(nb, timeout=300, kernel_name="python3",
                            resources={"metadata": {"path": os.path.dirname(NOTEBOOK)}}).execute()
    printed = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.outputs)
    assert "chosen lr" in printed and "test error" in printed
