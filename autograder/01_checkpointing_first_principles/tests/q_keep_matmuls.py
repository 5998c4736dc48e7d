OK_FORMAT = True

test = {   'name': 'q_keep_matmuls',
    'points': 3,
    'suites': [   {   'cases': [   {   'code': '>>> import torch\n'
                                               '>>> from torch.utils.checkpoint import CheckpointPolicy, SelectiveCheckpointContext\n'
                                               '>>> from effitrain_lessons.i18n import phrase\n'
                                               '>>> ctx = SelectiveCheckpointContext(is_recompute=False)\n'
                                               '>>> def answer(op):\n'
                                               '...     decision = keep_matmuls(ctx, op)\n'
                                               "...     assert type(decision) in (bool, CheckpointPolicy), phrase('keep_matmuls should return a CheckpointPolicy (or True to keep)')\n"
                                               '...     if type(decision) is bool:\n'
                                               '...         decision = CheckpointPolicy.MUST_SAVE if decision else CheckpointPolicy.PREFER_RECOMPUTE\n'
                                               '...     return decision\n'
                                               ">>> assert answer(torch.ops.aten.mm.default) in (CheckpointPolicy.MUST_SAVE, CheckpointPolicy.PREFER_SAVE), phrase('keep the mm outputs')\n"
                                               ">>> assert answer(torch.ops.aten.relu.default) in (CheckpointPolicy.MUST_RECOMPUTE, CheckpointPolicy.PREFER_RECOMPUTE), phrase('recompute the rest')\n",
                                       'hidden': False,
                                       'locked': False},
                                   {   'code': '>>> from effitrain_lessons.i18n import phrase\n'
                                               '>>> assert type(predicted_recomputations) is dict, phrase(\'predicted_recomputations should be a dict: a whole number for "mm", one for "relu"\')\n'
                                               ">>> assert all((type(op) is str for op in predicted_recomputations)) and set(predicted_recomputations) == {'mm', 'relu'}, phrase('predict for exactly "
                                               'two ops: "mm" and "relu"\')\n'
                                               ">>> assert all((type(n) is int and n >= 0 for n in predicted_recomputations.values())), phrase('counts are whole numbers')\n"
                                               ">>> assert type(predicted_kept_bytes) in (int, float) and predicted_kept_bytes >= 0, phrase('predicted_kept_bytes is a number of bytes')\n",
                                       'hidden': False,
                                       'locked': False},
                                   {   'code': '>>> from functools import partial\n'
                                               '>>> import torch\n'
                                               '>>> from torch.utils.checkpoint import checkpoint, create_selective_checkpoint_contexts\n'
                                               '>>> from effitrain_lessons.checkpointing import keep_ops_policy, two_matmuls\n'
                                               '>>> from effitrain_lessons.i18n import phrase\n'
                                               '>>> from effitrain_lessons.tracing import trace_step\n'
                                               '>>> def recomputed(policy):\n'
                                               '...     return trace_step(lambda x, w1, w2: checkpoint(two_matmuls, x, w1, w2, use_reentrant=False, '
                                               'context_fn=partial(create_selective_checkpoint_contexts, policy)), matmul_inputs)\n'
                                               '>>> traced = recomputed(keep_matmuls)\n'
                                               '>>> wanted = recomputed(keep_ops_policy([torch.ops.aten.mm.default]))\n'
                                               '>>> assert all((traced.recomputations(op) == wanted.recomputations(op) for op in (\'mm\', \'relu\'))), phrase("with your policy the backward pass '
                                               "recomputes other ops than part 1's policy does: keep the output of every torch.ops.aten.mm.default and recompute the rest (re-read section 2, If B is "
                                               'expensive to recompute, keep B)")\n'
                                               '>>> for name in plain_matmuls.gradients:\n'
                                               "...     torch.testing.assert_close(traced.gradients[name], plain_matmuls.gradients[name], msg=phrase('the gradient of {name} changed', name=name))\n",
                                       'hidden': False,
                                       'locked': False},
                                   {   'code': '>>> from functools import partial\n'
                                               '>>> import torch\n'
                                               '>>> from torch.utils.checkpoint import checkpoint, create_selective_checkpoint_contexts\n'
                                               '>>> from effitrain_lessons.checkpointing import keep_ops_policy, two_matmuls\n'
                                               '>>> from effitrain_lessons.checks import check_prediction\n'
                                               '>>> from effitrain_lessons.i18n import phrase\n'
                                               '>>> from effitrain_lessons.tracing import trace_step\n'
                                               '>>> keep_products = keep_ops_policy([torch.ops.aten.mm.default])\n'
                                               '>>> traced = trace_step(lambda x, w1, w2: checkpoint(two_matmuls, x, w1, w2, use_reentrant=False, '
                                               'context_fn=partial(create_selective_checkpoint_contexts, keep_products)), matmul_inputs)\n'
                                               ">>> check_prediction('predicted_recomputations', dict(predicted_recomputations), {'mm': traced.recomputations('mm'), 'relu': "
                                               "traced.recomputations('relu')}, why=phrase('Re-read section 2, If B is expensive to recompute, keep B: which outputs the policy keeps, and which ops "
                                               "run again because the backward pass needs what they computed.'))\n"
                                               ">>> check_prediction('predicted_kept_bytes', predicted_kept_bytes, traced.kept_bytes, rel=0.01, why=phrase('Re-read the hint: the cache keeps every "
                                               "output the policy answers MUST_SAVE for, whether the backward pass needs it or not; count their elements, at 4 bytes each.'))\n",
                                       'hidden': False,
                                       'locked': False},
                                   {   'code': '>>> from functools import partial\n'
                                               '>>> import torch\n'
                                               '>>> from torch.utils.checkpoint import CheckpointPolicy, SelectiveCheckpointContext, checkpoint, create_selective_checkpoint_contexts\n'
                                               '>>> from effitrain_lessons.checkpointing import two_matmuls, two_matmuls_inputs\n'
                                               '>>> from effitrain_lessons.tracing import trace_step\n'
                                               '>>> assert all((type(keep_matmuls(SelectiveCheckpointContext(is_recompute=False), op)) in (bool, CheckpointPolicy) for op in '
                                               '(torch.ops.aten.mm.default, torch.ops.aten.relu.default)))\n'
                                               '>>> test_inputs = two_matmuls_inputs(batch=16, width=32, hidden=96, seed=3)\n'
                                               '>>> traced = trace_step(lambda x, w1, w2: checkpoint(two_matmuls, x, w1, w2, use_reentrant=False, '
                                               'context_fn=partial(create_selective_checkpoint_contexts, keep_matmuls)), test_inputs)\n'
                                               ">>> assert traced.recomputations('mm') == 0 and traced.recomputations('relu') == 1\n"
                                               '>>> plain = trace_step(two_matmuls, test_inputs)\n'
                                               '>>> for name in plain.gradients:\n'
                                               '...     torch.testing.assert_close(traced.gradients[name], plain.gradients[name])\n',
                                       'hidden': True,
                                       'locked': False}],
                      'scored': True,
                      'setup': '',
                      'teardown': '',
                      'type': 'doctest'}]}
