OK_FORMAT = True

test = {   'name': 'q_outer_step',
    'points': 3,
    'suites': [   {   'cases': [   {   'code': '>>> import torch\n'
                                               '>>> from effitrain_lessons.i18n import phrase\n'
                                               '>>> def reference_rounds(rounds, lr, momentum):\n'
                                               '...     """torch.optim.SGD with Nesterov momentum on the averaged pseudo-gradients of fixed workers."""\n'
                                               '...     generator = torch.Generator().manual_seed(5)\n'
                                               '...     theta = [torch.randn(3, 2, generator=generator), torch.randn(4, generator=generator)]\n'
                                               '...     mine = [t.clone() for t in theta]\n'
                                               '...     momenta = [torch.zeros_like(t) for t in theta]\n'
                                               '...     reference = [t.clone().requires_grad_(True) for t in theta]\n'
                                               '...     optimizer = torch.optim.SGD(reference, lr=lr, momentum=momentum, nesterov=momentum > 0)\n'
                                               '...     for round_ in range(rounds):\n'
                                               '...         workers = [[t - 0.1 * (w + 1) * (round_ + 1) * torch.randn(t.shape, generator=generator) for t in mine] for w in range(2)]\n'
                                               '...         outer_step_by_hand(mine, workers, momenta, lr=lr, momentum=momentum)\n'
                                               '...         with torch.no_grad():\n'
                                               '...             for ref, index in zip(reference, range(len(reference))):\n'
                                               '...                 ref.grad = sum((ref - worker[index] for worker in workers)) / len(workers)\n'
                                               '...         optimizer.step()\n'
                                               '...         difference = max(((m - r).abs().max().item() for m, r in zip(mine, reference)))\n'
                                               '...         assert difference < 1e-05, phrase("after round {round}, your global parameters differ from torch.optim.SGD(nesterov=True)\'s by '
                                               '{difference:.2e}: check the average over the workers, the momentum buffer (b = momentum * b + delta, kept between rounds) and the Nesterov step (theta '
                                               '-= lr * (delta + momentum * b))", round=round_ + 1, difference=difference)\n'
                                               '>>> reference_rounds(2, lr=0.7, momentum=0.9)\n',
                                       'hidden': False,
                                       'locked': False},
                                   {   'code': '>>> import torch\n'
                                               '>>> for rounds, lr, momentum in ((4, 0.5, 0.8), (3, 1.0, 0.0), (1, 0.7, 0.9)):\n'
                                               '...     generator = torch.Generator().manual_seed(rounds)\n'
                                               '...     theta = [torch.randn(5, generator=generator), torch.randn(2, 3, generator=generator)]\n'
                                               '...     mine, momenta = ([t.clone() for t in theta], [torch.zeros_like(t) for t in theta])\n'
                                               '...     reference = [t.clone().requires_grad_(True) for t in theta]\n'
                                               '...     optimizer = torch.optim.SGD(reference, lr=lr, momentum=momentum, nesterov=momentum > 0)\n'
                                               '...     for _ in range(rounds):\n'
                                               '...         workers = [[t + torch.randn(t.shape, generator=generator) for t in mine] for _ in range(3)]\n'
                                               '...         average = [sum((worker[i] for worker in workers)) / 3 for i in range(len(mine))]\n'
                                               '...         outer_step_by_hand(mine, workers, momenta, lr=lr, momentum=momentum)\n'
                                               '...         with torch.no_grad():\n'
                                               '...             for i, ref in enumerate(reference):\n'
                                               '...                 ref.grad = sum((ref - worker[i] for worker in workers)) / 3\n'
                                               '...         optimizer.step()\n'
                                               '...         assert all((torch.allclose(m, r.detach(), atol=1e-05) for m, r in zip(mine, reference)))\n'
                                               '...         if lr == 1.0 and momentum == 0.0:\n'
                                               '...             assert all((torch.allclose(m, a, atol=1e-06) for m, a in zip(mine, average)))\n',
                                       'hidden': True,
                                       'locked': False}],
                      'scored': True,
                      'setup': '',
                      'teardown': '',
                      'type': 'doctest'}]}
