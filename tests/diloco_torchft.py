"""torchft's DiLoCo on a toy problem, as an independent oracle for lesson 5's outer step.

    python tests/diloco_torchft.py OUT.json H STEPS

Two replica groups of one process each (spawned: torchft starts threads in Rust that a fork would
not survive), on the CPU over gloo, everything on 127.0.0.1 with ports the system picks; the
lighthouse runs in this process. Each process r trains `toy_model()` with plain SGD (lr 0.1) on the
fixed inputs of `toy_input(r, t)`, and torchft's `DiLoCo` syncs every H inner steps with an outer
SGD (lr 0.7, Nesterov momentum 0.9). `init_sync=False`: the replicas start from the same seeded
weights, and a first-quorum "heal" would copy one replica's state over the other's first round.
Writes each process's final parameters, flattened, to OUT.json. tests/test_diloco.py runs it.
"""

import json
import multiprocessing
import os
import sys
import traceback
from datetime import timedelta

WORLD = 2
TIMEOUT = timedelta(seconds=60)


def toy_model():
    import torch

    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.Tanh(), torch.nn.Linear(3, 2))


def toy_input(rank: int, step: int):
    import torch

    return torch.full((5, 4), 0.1 * (rank + 1) * (step + 1))


def _replica(rank: int, h: int, steps: int, addresses, results) -> None:
    try:
        import torch
        from torch.distributed import TCPStore
        from torchft.local_sgd import DiLoCo
        from torchft.manager import Manager
        from torchft.process_group import ProcessGroupGloo

        lighthouse = addresses.get(timeout=120)
        torch.set_num_threads(1)
        model = toy_model()
        inner = torch.optim.SGD(model.parameters(), lr=0.1)
        outer = torch.optim.SGD(model.parameters(), lr=0.7, momentum=0.9, nesterov=True)
        store = TCPStore(
            "127.0.0.1", 0, world_size=1, is_master=True, wait_for_workers=False, timeout=TIMEOUT
        )
        manager = Manager(
            pg=ProcessGroupGloo(timeout=TIMEOUT),
            min_replica_size=WORLD,
            use_async_quorum=False,
            init_sync=False,
            load_state_dict=lambda state: model.load_state_dict(state["model"]),
            state_dict=lambda: {"model": model.state_dict()},
            timeout=TIMEOUT,
            quorum_timeout=TIMEOUT,
            connect_timeout=TIMEOUT,
            rank=0,
            world_size=1,
            store_addr="127.0.0.1",
            store_port=store.port,
            lighthouse_addr=lighthouse,
            replica_id=f"replica{rank}",
            port=0,
            hostname="127.0.0.1",
        )
        try:
            with DiLoCo(manager, [model], inner, outer, sync_every=h):
                for step in range(steps):
                    inner.zero_grad()
                    model(toy_input(rank, step)).square().mean().backward()
                    inner.step()  # DiLoCo syncs after every H-th inner step
            results.put((rank, torch.cat([p.detach().reshape(-1) for p in model.parameters()]).tolist()))
        finally:
            manager.shutdown(wait=False)
    except BaseException:
        results.put((rank, traceback.format_exc()))


def main(out: str, h: int, steps: int) -> int:
    os.environ["GLOO_SOCKET_IFNAME"] = "lo"
    for name in [name for name in os.environ if name.startswith("TORCHFT_")]:
        del os.environ[name]  # they override the constructor's arguments
    context = multiprocessing.get_context("spawn")
    addresses, results = context.Queue(), context.Queue()
    replicas = [
        context.Process(target=_replica, args=(rank, h, steps, addresses, results)) for rank in range(WORLD)
    ]
    for replica in replicas:
        replica.start()
    server = None
    try:
        from torchft._torchft import LighthouseServer

        server = LighthouseServer(bind="127.0.0.1:0", min_replicas=WORLD)
        port = server.address().rsplit(":", 1)[1]  # it advertises the host name; loopback is enough
        for _ in range(WORLD):
            addresses.put(f"http://127.0.0.1:{port}")
        finals = dict(results.get(timeout=150) for _ in range(WORLD))
        for replica in replicas:
            replica.join(timeout=20)
    finally:
        for replica in replicas:
            if replica.is_alive():
                replica.kill()
                replica.join()
        if server is not None:
            server.shutdown()
    failed = [value for value in finals.values() if isinstance(value, str)]
    if failed:
        print(failed[0], file=sys.stderr)
        return 1
    with open(out, "w", encoding="utf-8") as file:
        json.dump([finals[rank] for rank in range(WORLD)], file)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3])))
