OK_FORMAT = True

test = {   'name': 'q_checkpoint_block',
    'points': 2,
    'suites': [   {   'cases': [   {   'code': '>>> import torch\n'
                                               '>>> from effitrain_lessons.i18n import phrase\n'
                                               '>>> out = checkpointed_block(x_block)\n'
                                               '>>> assert type(out) is torch.Tensor, phrase("checkpointed_block(x) should return the block\'s output, a tensor")\n'
                                               '>>> torch.testing.assert_close(out, block(x_block))\n',
                                       'hidden': False,
                                       'locked': False},
                                   {   'code': '>>> import torch\n'
                                               '>>> from effitrain_lessons.i18n import phrase\n'
                                               '>>> from effitrain_lessons.tracing import trace_step\n'
                                               ">>> assert type(checkpointed_block(x_block)) is torch.Tensor, phrase('checkpointed_block(x) should return a tensor')\n"
                                               ">>> traced = trace_step(checkpointed_block, {'x': x_block}, parameters=block)\n"
                                               ">>> plain = trace_step(block, {'x': x_block})\n"
                                               ">>> assert traced.kept_bytes <= 0.25 * plain.kept_bytes, phrase('the block still keeps {kept} of {plain} bytes: run it inside checkpoint(...)', "
                                               'kept=traced.kept_bytes, plain=plain.kept_bytes)\n',
                                       'hidden': False,
                                       'locked': False},
                                   {   'code': '>>> import torch\n'
                                               '>>> from effitrain_lessons.i18n import phrase\n'
                                               '>>> from effitrain_lessons.tracing import trace_step\n'
                                               ">>> assert type(checkpointed_block(x_block)) is torch.Tensor, phrase('checkpointed_block(x) should return a tensor')\n"
                                               ">>> want = trace_step(block, {'x': x_block}).gradients\n"
                                               ">>> got = trace_step(checkpointed_block, {'x': x_block}, parameters=block)\n"
                                               ">>> assert sum(got.recomputed.values()) > 0, phrase('nothing ran again during the backward pass: run the block inside checkpoint(...)')\n"
                                               '>>> for name in want:\n'
                                               '...     torch.testing.assert_close(got.gradients[name], want[name], msg=phrase("the gradient of {name} is not the plain block\'s", name=name))\n',
                                       'hidden': False,
                                       'locked': False},
                                   {   'code': '>>> import torch\n'
                                               '>>> from effitrain_lessons.i18n import phrase\n'
                                               '>>> from effitrain_lessons.tracing import trace_step\n'
                                               '>>> assert type(checkpointed_block(x_block)) is torch.Tensor\n'
                                               '>>> x_test = torch.randn(16, 64, generator=torch.Generator().manual_seed(1), requires_grad=True)\n'
                                               ">>> want = trace_step(block, {'x': x_test}).gradients\n"
                                               ">>> got = trace_step(checkpointed_block, {'x': x_test}, parameters=block)\n"
                                               '>>> assert set(got.gradients) == set(want)\n'
                                               '>>> for name in want:\n'
                                               '...     torch.testing.assert_close(got.gradients[name], want[name])\n'
                                               ">>> assert sum(got.recomputed.values()) > 0, phrase('the block should be recomputed during the backward pass')\n",
                                       'hidden': True,
                                       'locked': False},
                                   {   'code': '>>> import torch\n'
                                               '>>> from effitrain_lessons.tracing import trace_step\n'
                                               '>>> assert type(checkpointed_block(x_block)) is torch.Tensor\n'
                                               '>>> x_frozen = torch.randn(16, 64, generator=torch.Generator().manual_seed(2))\n'
                                               ">>> want = trace_step(block, {'x': x_frozen}).gradients\n"
                                               ">>> got = trace_step(checkpointed_block, {'x': x_frozen}, parameters=block).gradients\n"
                                               '>>> assert set(got) == set(want) == {name for name, _ in block.named_parameters()}\n'
                                               '>>> for name in want:\n'
                                               '...     torch.testing.assert_close(got[name], want[name])\n',
                                       'hidden': True,
                                       'locked': False}],
                      'scored': True,
                      'setup': '',
                      'teardown': '',
                      'type': 'doctest'}]}
