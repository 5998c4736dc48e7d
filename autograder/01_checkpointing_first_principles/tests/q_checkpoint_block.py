OK_FORMAT = True

test = {   'name': 'q_checkpoint_block',
    'points': 2,
    'suites': [   {   'cases': [   {   'code': '>>> import numpy as np\n'
                                               '>>> import torch\n'
                                               '>>> from effitrain_lessons.shared.i18n import phrase\n'
                                               '>>> from effitrain_lessons.shared.judging import close, plain\n'
                                               '>>> out = checkpointed_block(x_block)\n'
                                               ">>> got = {'kind': type(out).__name__, 'out': out}\n"
                                               '>>> if type(out) is torch.Tensor:\n'
                                               "...     got['dtype'] = str(out.dtype)\n"
                                               '>>> want = {}\n'
                                               ">>> want['out'] = block(x_block)\n"
                                               ">>> want['dtype'] = str(want['out'].dtype)\n"
                                               '>>> got, want = (plain(got), plain(want))\n'
                                               '>>> assert got[\'kind\'] == \'Tensor\' and type(got[\'out\']) is np.ndarray, phrase("checkpointed_block(x) should return the block\'s output, a '
                                               'tensor")\n'
                                               ">>> assert got['dtype'] == want['dtype'] and close(got['out'], want['out']), phrase('checkpointed_block(x) gives another output than block(x): re-read "
                                               "section 2, With checkpointing: delete A and B')\n",
                                       'hidden': False,
                                       'locked': False},
                                   {   'code': '>>> import torch\n'
                                               '>>> from effitrain_lessons.first_principles.checkpointing import resident_kept_bytes\n'
                                               '>>> from effitrain_lessons.shared.i18n import phrase\n'
                                               '>>> from effitrain_lessons.shared.judging import plain\n'
                                               '>>> x_wide = torch.randn(4096, 64, generator=torch.Generator().manual_seed(0), requires_grad=True)\n'
                                               '>>> out = checkpointed_block(x_block)\n'
                                               ">>> got = {'kind': type(out).__name__}\n"
                                               '>>> if type(out) is torch.Tensor:\n'
                                               "...     got['kept_bytes'] = resident_kept_bytes(checkpointed_block, x_wide)\n"
                                               '>>> want = {}\n'
                                               ">>> want['kept_bytes'] = resident_kept_bytes(block, x_wide)\n"
                                               '>>> got, want = (plain(got), plain(want))\n'
                                               ">>> assert got['kind'] == 'Tensor', phrase('checkpointed_block(x) should return a tensor')\n"
                                               ">>> assert got['kept_bytes'] <= 0.25 * want['kept_bytes'], phrase('the block still keeps {kept} of {plain} bytes: re-read section 2, With "
                                               "checkpointing', kept=got['kept_bytes'], plain=want['kept_bytes'])\n",
                                       'hidden': False,
                                       'locked': False},
                                   {   'code': '>>> import torch\n'
                                               '>>> from effitrain_lessons.first_principles.checkpointing import resident_kept_bytes\n'
                                               '>>> from effitrain_lessons.shared.i18n import phrase\n'
                                               '>>> from effitrain_lessons.shared.judging import close, plain\n'
                                               '>>> from effitrain_lessons.shared.tracing import trace_step\n'
                                               '>>> x_wide = torch.randn(4096, 64, generator=torch.Generator().manual_seed(0), requires_grad=True)\n'
                                               '>>> out = checkpointed_block(x_block)\n'
                                               ">>> got = {'kind': type(out).__name__}\n"
                                               '>>> if type(out) is torch.Tensor:\n'
                                               "...     traced = trace_step(checkpointed_block, {'x': x_block}, parameters=block)\n"
                                               "...     got['recomputed'] = sum(traced.recomputed.values())\n"
                                               "...     got['gradients'] = traced.gradients\n"
                                               "...     got['kept_bytes'] = resident_kept_bytes(checkpointed_block, x_wide)\n"
                                               '>>> want = {}\n'
                                               ">>> want['gradients'] = trace_step(block, {'x': x_block}).gradients\n"
                                               ">>> want['kept_bytes'] = resident_kept_bytes(block, x_wide)\n"
                                               '>>> got, want = (plain(got), plain(want))\n'
                                               ">>> assert got['kind'] == 'Tensor', phrase('checkpointed_block(x) should return a tensor')\n"
                                               ">>> assert got['recomputed'] > 0 and got['kept_bytes'] <= 0.25 * want['kept_bytes'], phrase('nothing ran again during the backward pass: re-read "
                                               "section 2, With checkpointing')\n"
                                               ">>> for name in want['gradients']:\n"
                                               '...     assert close(got[\'gradients\'].get(name), want[\'gradients\'][name]), phrase("the gradient of {name} is not the plain block\'s", name=name)\n',
                                       'hidden': False,
                                       'locked': False},
                                   {   'code': '>>> import torch\n'
                                               '>>> from effitrain_lessons.first_principles.checkpointing import resident_kept_bytes\n'
                                               '>>> from effitrain_lessons.shared.i18n import phrase\n'
                                               '>>> from effitrain_lessons.shared.judging import close, plain\n'
                                               '>>> from effitrain_lessons.shared.tracing import trace_step\n'
                                               '>>> x_test = torch.randn(16, 64, generator=torch.Generator().manual_seed(1), requires_grad=True)\n'
                                               '>>> x_wide = torch.randn(2048, 64, generator=torch.Generator().manual_seed(1), requires_grad=True)\n'
                                               '>>> out = checkpointed_block(x_test)\n'
                                               ">>> got = {'kind': type(out).__name__}\n"
                                               '>>> if type(out) is torch.Tensor:\n'
                                               "...     traced = trace_step(checkpointed_block, {'x': x_test}, parameters=block)\n"
                                               "...     got['recomputed'] = sum(traced.recomputed.values())\n"
                                               "...     got['gradients'] = traced.gradients\n"
                                               "...     got['kept_bytes'] = resident_kept_bytes(checkpointed_block, x_wide)\n"
                                               '>>> want = {}\n'
                                               ">>> want['gradients'] = trace_step(block, {'x': x_test}).gradients\n"
                                               ">>> want['kept_bytes'] = resident_kept_bytes(block, x_wide)\n"
                                               '>>> got, want = (plain(got), plain(want))\n'
                                               ">>> assert got['kind'] == 'Tensor'\n"
                                               ">>> assert set(got['gradients']) == set(want['gradients'])\n"
                                               ">>> for name in want['gradients']:\n"
                                               "...     assert close(got['gradients'][name], want['gradients'][name])\n"
                                               ">>> assert got['kept_bytes'] <= 0.25 * want['kept_bytes']\n"
                                               ">>> assert got['recomputed'] > 0, phrase('the block should be recomputed during the backward pass')\n",
                                       'hidden': True,
                                       'locked': False},
                                   {   'code': '>>> import torch\n'
                                               '>>> from effitrain_lessons.shared.judging import close, plain\n'
                                               '>>> from effitrain_lessons.shared.tracing import trace_step\n'
                                               '>>> x_frozen = torch.randn(16, 64, generator=torch.Generator().manual_seed(2))\n'
                                               '>>> out = checkpointed_block(x_frozen)\n'
                                               ">>> got = {'kind': type(out).__name__}\n"
                                               '>>> if type(out) is torch.Tensor:\n'
                                               "...     traced = trace_step(checkpointed_block, {'x': x_frozen}, parameters=block)\n"
                                               "...     got['gradients'] = traced.gradients\n"
                                               '>>> want = {}\n'
                                               ">>> want['gradients'] = trace_step(block, {'x': x_frozen}).gradients\n"
                                               ">>> want['parameters'] = [name for name, _ in block.named_parameters()]\n"
                                               '>>> got, want = (plain(got), plain(want))\n'
                                               ">>> assert got['kind'] == 'Tensor'\n"
                                               ">>> assert set(got['gradients']) == set(want['gradients']) == set(want['parameters'])\n"
                                               ">>> for name in want['gradients']:\n"
                                               "...     assert close(got['gradients'][name], want['gradients'][name])\n",
                                       'hidden': True,
                                       'locked': False}],
                      'scored': True,
                      'setup': '',
                      'teardown': '',
                      'type': 'doctest'}]}
