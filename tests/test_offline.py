"""With the network cut entirely, the default path works and the hub path fails fast and clearly.

Runs a fresh interpreter in a new network namespace (`unshare -n`, loopback up), so nothing can
reach any host: no hub, no registry, no cache server.
"""

import shutil
import subprocess
import sys
import textwrap

import pytest

SCRIPT = textwrap.dedent(
    """
    import time
    import torch
    from effitrain_lessons.shared.data import load_mrpc, load_tokenizer, tokenized_mrpc
    from effitrain_lessons.shared.models import load, tiny_bert

    torch.manual_seed(0)
    data = load_mrpc()
    tokenizer = load_tokenizer()
    splits = tokenized_mrpc(tokenizer)
    model = tiny_bert()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    batch = splits["train"][:16]
    loss = model(**batch).loss
    loss.backward()
    optimizer.step()
    assert torch.isfinite(loss)
    print("step ok", len(data["train"]), len(tokenizer), round(loss.item(), 3))

    for attempt in (lambda: load_mrpc(source="hub"), lambda: load("bert-base-uncased")):
        start = time.monotonic()
        try:
            attempt()
        except RuntimeError as error:
            print("hub refused in %.1f s: %s" % (time.monotonic() - start, error))
        else:
            raise SystemExit("the hub path worked without a network")
    """
)


def network_cut_command() -> list[str]:
    if not shutil.which("unshare") or not shutil.which("ip"):
        pytest.skip("needs unshare and ip (util-linux, iproute2) to cut the network")
    probe = subprocess.run(["unshare", "-n", "true"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip("this user may not create a network namespace (unshare -n needs root)")
    return ["unshare", "-n", "sh", "-c", 'ip link set lo up && exec "$0" "$@"', sys.executable]


def test_data_tokenizer_model_and_a_training_step_work_with_no_network():
    done = subprocess.run([*network_cut_command(), "-c", SCRIPT], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "step ok" in done.stdout
    refusals = [line for line in done.stdout.splitlines() if line.startswith("hub refused")]
    assert len(refusals) == 2
    for line in refusals:
        seconds = float(line.split()[3])
        assert seconds < 10, line  # fails fast instead of hanging on retries
    assert 'source="bundled"' in refusals[0] and "tiny_bert()" in refusals[1]
