OK_FORMAT = True

test = {   'name': 'q_keep_matmuls',
    'points': 3,
    'suites': [   {   'cases': [   {   'code': '>>> import torch\n'
                                               '>>> from torch.utils.checkpoint import CheckpointPolicy, SelectiveCheckpointContext\n'
                                               '>>> from effitrain_lessons.shared.i18n import phrase\n'
                                               '>>> from effitrain_lessons.shared.judging import plain\n'
                                               '>>> ctx = SelectiveCheckpointContext(is_recompute=False)\n'
                                               '>>> got = {}\n'
                                               ">>> for name, op in (('mm', torch.ops.aten.mm.default), ('relu', torch.ops.aten.relu.default)):\n"
                                               '...     decision = keep_matmuls(ctx, op)\n'
                                               "...     got[name] = {'kind': type(decision).__name__, 'value': decision.name if type(decision) is CheckpointPolicy else decision}\n"
                                               '>>> want = {}\n'
                                               ">>> want['keep'] = [CheckpointPolicy.MUST_SAVE.name, CheckpointPolicy.PREFER_SAVE.name]\n"
                                               ">>> want['recompute'] = [CheckpointPolicy.MUST_RECOMPUTE.name, CheckpointPolicy.PREFER_RECOMPUTE.name]\n"
                                               '>>> got, want = (plain(got), plain(want))\n'
                                               '>>> def answer(name):\n'
                                               '...     decision = got[name]\n'
                                               "...     assert decision['kind'] in ('bool', 'CheckpointPolicy'), phrase('keep_matmuls should return a CheckpointPolicy (or True to keep)')\n"
                                               "...     if decision['kind'] == 'bool':\n"
                                               "...         return want['keep'][0] if decision['value'] is True else want['recompute'][1]\n"
                                               "...     return decision['value']\n"
                                               ">>> assert answer('mm') in want['keep'], phrase('keep the mm outputs')\n"
                                               ">>> assert answer('relu') in want['recompute'], phrase('recompute the rest')\n",
                                       'hidden': False,
                                       'locked': False},
                                   {   'code': '>>> from effitrain_lessons.shared.i18n import phrase\n'
                                               '>>> from effitrain_lessons.shared.judging import plain\n'
                                               ">>> got = {'kind': type(predicted_recomputations).__name__, 'recomputations': predicted_recomputations, 'kept_bytes': predicted_kept_bytes}\n"
                                               '>>> want = {}\n'
                                               '>>> got, want = (plain(got), plain(want))\n'
                                               ">>> counts = got['recomputations']\n"
                                               '>>> assert got[\'kind\'] == \'dict\', phrase(\'predicted_recomputations should be a dict: a whole number for "mm", one for "relu"\')\n'
                                               '>>> assert type(counts) is dict and set(counts) == {\'mm\', \'relu\'}, phrase(\'predict for exactly two ops: "mm" and "relu"\')\n'
                                               ">>> assert all((type(n) is int and n >= 0 for n in counts.values())), phrase('counts are whole numbers')\n"
                                               ">>> assert type(got['kept_bytes']) in (int, float) and got['kept_bytes'] >= 0, phrase('predicted_kept_bytes is a number of bytes')\n",
                                       'hidden': False,
                                       'locked': False},
                                   {   'code': '>>> from functools import partial\n'
                                               '>>> import torch\n'
                                               '>>> from torch.utils.checkpoint import checkpoint, create_selective_checkpoint_contexts\n'
                                               '>>> from effitrain_lessons.first_principles.checkpointing import keep_ops_policy, two_matmuls\n'
                                               '>>> from effitrain_lessons.shared.i18n import phrase\n'
                                               '>>> from effitrain_lessons.shared.judging import close, plain\n'
                                               '>>> from effitrain_lessons.shared.tracing import trace_step\n'
                                               '>>> def recomputed(policy):\n'
                                               '...     traced = trace_step(lambda x, w1, w2: checkpoint(two_matmuls, x, w1, w2, use_reentrant=False, '
                                               'context_fn=partial(create_selective_checkpoint_contexts, policy)), matmul_inputs)\n'
                                               "...     return {'recomputations': {op: traced.recomputations(op) for op in ('mm', 'relu')}, 'gradients': traced.gradients}\n"
                                               '>>> got = recomputed(keep_matmuls)\n'
                                               '>>> want = {}\n'
                                               ">>> want['recomputations'] = recomputed(keep_ops_policy([torch.ops.aten.mm.default]))['recomputations']\n"
                                               ">>> want['gradients'] = plain_matmuls.gradients\n"
                                               '>>> got, want = (plain(got), plain(want))\n'
                                               '>>> assert got[\'recomputations\'] == want[\'recomputations\'], phrase("with your policy the backward pass recomputes other ops than part 1\'s policy '
                                               'does: keep the output of every torch.ops.aten.mm.default and recompute the rest (re-read section 2, If B is expensive to recompute, keep B)")\n'
                                               ">>> for name in want['gradients']:\n"
                                               "...     assert close(got['gradients'].get(name), want['gradients'][name]), phrase('the gradient of {name} changed', name=name)\n",
                                       'hidden': False,
                                       'locked': False},
                                   {   'code': '>>> from functools import partial\n'
                                               '>>> import torch\n'
                                               '>>> from torch.utils.checkpoint import checkpoint, create_selective_checkpoint_contexts\n'
                                               '>>> from effitrain_lessons.first_principles.checkpointing import keep_ops_policy, two_matmuls\n'
                                               '>>> from effitrain_lessons.shared.checks import check_prediction\n'
                                               '>>> from effitrain_lessons.shared.i18n import phrase\n'
                                               '>>> from effitrain_lessons.shared.judging import plain\n'
                                               '>>> from effitrain_lessons.shared.tracing import trace_step\n'
                                               ">>> got = {'recomputations': predicted_recomputations, 'kept_bytes': predicted_kept_bytes}\n"
                                               '>>> want = {}\n'
                                               '>>> keep_products = keep_ops_policy([torch.ops.aten.mm.default])\n'
                                               '>>> traced = trace_step(lambda x, w1, w2: checkpoint(two_matmuls, x, w1, w2, use_reentrant=False, '
                                               'context_fn=partial(create_selective_checkpoint_contexts, keep_products)), matmul_inputs)\n'
                                               ">>> want['recomputations'] = {op: traced.recomputations(op) for op in ('mm', 'relu')}\n"
                                               ">>> want['kept_bytes'] = traced.kept_bytes\n"
                                               '>>> got, want = (plain(got), plain(want))\n'
                                               ">>> check_prediction('predicted_recomputations', got['recomputations'], want['recomputations'], why=phrase('Re-read section 2, If B is expensive to "
                                               "recompute, keep B: which outputs the policy keeps, and which ops run again because the backward pass needs what they computed.'))\n"
                                               ">>> check_prediction('predicted_kept_bytes', got['kept_bytes'], want['kept_bytes'], rel=0.01, why=phrase('Re-read the hint: the cache keeps every "
                                               "output the policy answers MUST_SAVE for, whether the backward pass needs it or not; count their elements, at 4 bytes each.'))\n",
                                       'hidden': False,
                                       'locked': False},
                                   {   'code': '>>> from functools import partial\n'
                                               '>>> import torch\n'
                                               '>>> from torch.utils.checkpoint import CheckpointPolicy, SelectiveCheckpointContext, checkpoint, create_selective_checkpoint_contexts\n'
                                               '>>> from effitrain_lessons.first_principles.checkpointing import two_matmuls, two_matmuls_inputs\n'
                                               '>>> from effitrain_lessons.shared.judging import close, plain\n'
                                               '>>> from effitrain_lessons.shared.tracing import trace_step\n'
                                               '>>> test_inputs = two_matmuls_inputs(batch=16, width=32, hidden=96, seed=3)\n'
                                               '>>> ctx = SelectiveCheckpointContext(is_recompute=False)\n'
                                               ">>> got = {'kinds': [type(keep_matmuls(ctx, op)).__name__ for op in (torch.ops.aten.mm.default, torch.ops.aten.relu.default)]}\n"
                                               '>>> traced = trace_step(lambda x, w1, w2: checkpoint(two_matmuls, x, w1, w2, use_reentrant=False, '
                                               'context_fn=partial(create_selective_checkpoint_contexts, keep_matmuls)), test_inputs)\n'
                                               ">>> got['recomputations'] = {op: traced.recomputations(op) for op in ('mm', 'relu')}\n"
                                               ">>> got['gradients'] = traced.gradients\n"
                                               '>>> want = {}\n'
                                               ">>> want['kinds'] = [bool.__name__, CheckpointPolicy.__name__]\n"
                                               ">>> want['gradients'] = trace_step(two_matmuls, test_inputs).gradients\n"
                                               '>>> got, want = (plain(got), plain(want))\n'
                                               ">>> assert all((kind in want['kinds'] for kind in got['kinds']))\n"
                                               ">>> assert got['recomputations'] == {'mm': 0, 'relu': 1}\n"
                                               ">>> for name in want['gradients']:\n"
                                               "...     assert close(got['gradients'].get(name), want['gradients'][name])\n",
                                       'hidden': True,
                                       'locked': False}],
                      'scored': True,
                      'setup': '',
                      'teardown': '',
                      'type': 'doctest'}]}
