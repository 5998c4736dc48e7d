OK_FORMAT = True

test = {   'name': 'q_outer_step',
    'points': 3,
    'suites': [   {   'cases': [   {   'code': '>>> import math\n'
                                               '>>> import numpy as np\n'
                                               '>>> import torch\n'
                                               '>>> from effitrain_lessons.shared.i18n import phrase\n'
                                               '>>> from effitrain_lessons.shared.judging import plain\n'
                                               '>>> def draws():\n'
                                               '...     """Starting parameters, and two workers\' parameters for two rounds, drawn around them."""\n'
                                               '...     generator = torch.Generator().manual_seed(5)\n'
                                               '...     theta = [torch.randn(3, 2, generator=generator), torch.randn(4, generator=generator)]\n'
                                               '...     workers = [[[t - 0.1 * (w + 1) * (round_ + 1) * torch.randn(t.shape, generator=generator) for t in theta] for w in range(2)] for round_ in '
                                               'range(2)]\n'
                                               '...     return (theta, workers)\n'
                                               '>>> theta, workers = draws()\n'
                                               '>>> mine, momenta = ([t.clone() for t in theta], [torch.zeros_like(t) for t in theta])\n'
                                               '>>> after = []\n'
                                               '>>> for round_workers in workers:\n'
                                               '...     outer_step_by_hand(mine, round_workers, momenta, lr=0.7, momentum=0.9)\n'
                                               '...     after.append([t.clone() for t in mine])\n'
                                               ">>> got = {'after': after}\n"
                                               '>>> want = {}\n'
                                               '>>> theta, workers = draws()\n'
                                               '>>> reference = [t.clone().requires_grad_(True) for t in theta]\n'
                                               '>>> optimizer = torch.optim.SGD(reference, lr=0.7, momentum=0.9, nesterov=True)\n'
                                               ">>> want['after'] = []\n"
                                               '>>> for round_workers in workers:\n'
                                               '...     with torch.no_grad():\n'
                                               '...         for index, ref in enumerate(reference):\n'
                                               '...             ref.grad = sum((ref - worker[index] for worker in round_workers)) / len(round_workers)\n'
                                               '...     optimizer.step()\n'
                                               "...     want['after'].append([ref.detach().clone() for ref in reference])\n"
                                               '>>> got, want = (plain(got), plain(want))\n'
                                               ">>> for round_, (mine, reference) in enumerate(zip(got['after'], want['after']), 1):\n"
                                               '...     difference = max((float(np.abs(m - r).max()) if np.shape(m) == r.shape else math.inf for m, r in zip(mine, reference)))\n'
                                               '...     assert difference < 1e-05, phrase("after round {round}, your global parameters differ from torch.optim.SGD(nesterov=True)\'s by '
                                               '{difference:.2e}: check the average over the workers, the momentum buffer (b = momentum * b + delta, kept between rounds) and the Nesterov step (theta '
                                               '-= lr * (delta + momentum * b))", round=round_, difference=difference)\n',
                                       'hidden': False,
                                       'locked': False},
                                   {   'code': '>>> import torch\n'
                                               '>>> from effitrain_lessons.shared.judging import close, plain\n'
                                               '>>> SETTINGS = ((4, 0.5, 0.8), (3, 1.0, 0.0), (1, 0.7, 0.9))\n'
                                               '>>> def draws(rounds):\n'
                                               '...     """Starting parameters, and three workers\' parameters for each round, drawn around them."""\n'
                                               '...     generator = torch.Generator().manual_seed(rounds)\n'
                                               '...     theta = [torch.randn(5, generator=generator), torch.randn(2, 3, generator=generator)]\n'
                                               '...     workers = [[[t + torch.randn(t.shape, generator=generator) for t in theta] for _ in range(3)] for _ in range(rounds)]\n'
                                               '...     return (theta, workers)\n'
                                               ">>> got = {'after': []}\n"
                                               '>>> for rounds, lr, momentum in SETTINGS:\n'
                                               '...     theta, workers = draws(rounds)\n'
                                               '...     mine, momenta = ([t.clone() for t in theta], [torch.zeros_like(t) for t in theta])\n'
                                               "...     got['after'].append([])\n"
                                               '...     for round_workers in workers:\n'
                                               '...         outer_step_by_hand(mine, round_workers, momenta, lr=lr, momentum=momentum)\n'
                                               "...         got['after'][-1].append([t.clone() for t in mine])\n"
                                               '>>> want = {}\n'
                                               ">>> want['after'] = []\n"
                                               '>>> for rounds, lr, momentum in SETTINGS:\n'
                                               '...     theta, workers = draws(rounds)\n'
                                               '...     reference = [t.clone().requires_grad_(True) for t in theta]\n'
                                               '...     optimizer = torch.optim.SGD(reference, lr=lr, momentum=momentum, nesterov=momentum > 0)\n'
                                               "...     want['after'].append([])\n"
                                               '...     for round_workers in workers:\n'
                                               '...         with torch.no_grad():\n'
                                               '...             for i, ref in enumerate(reference):\n'
                                               '...                 ref.grad = sum((ref - worker[i] for worker in round_workers)) / 3\n'
                                               '...         optimizer.step()\n'
                                               "...         want['after'][-1].append([ref.detach().clone() for ref in reference])\n"
                                               ">>> want['average'] = [[sum((worker[i] for worker in round_workers)) / 3 for i in range(2)] for round_workers in draws(3)[1]]\n"
                                               '>>> got, want = (plain(got), plain(want))\n'
                                               ">>> assert close(got['after'], want['after'], rtol=1e-05, atol=1e-05)\n"
                                               ">>> assert close(got['after'][1], want['average'], rtol=1e-05, atol=1e-06)\n",
                                       'hidden': True,
                                       'locked': False}],
                      'scored': True,
                      'setup': '',
                      'teardown': '',
                      'type': 'doctest'}]}
