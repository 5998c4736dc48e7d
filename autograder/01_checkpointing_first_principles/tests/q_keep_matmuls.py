OK_FORMAT = True

test = {   'name': 'q_keep_matmuls',
    'points': 3,
    'suites': [   {   'cases': [   {   'code': '>>> import os\n'
                                               '>>> from functools import partial\n'
                                               '>>> import torch\n'
                                               '>>> from torch.utils.checkpoint import checkpoint, create_selective_checkpoint_contexts\n'
                                               '>>> from effitrain_lessons.first_principles.checkpointing import keep_ops_policy, two_matmuls\n'
                                               '>>> from effitrain_lessons.shared.checks import check_prediction\n'
                                               '>>> from effitrain_lessons.shared.i18n import phrase\n'
                                               '>>> from effitrain_lessons.shared.judging import plain\n'
                                               '>>> from effitrain_lessons.shared.tracing import trace_step\n'
                                               '>>> predicts = callable(predicted_kept_bytes)\n'
                                               '>>> start = sum(os.times()[:4])\n'
                                               ">>> got = {'kind': type(predicted_recomputations).__name__, 'recomputations': predicted_recomputations, 'kept_bytes': predicted_kept_bytes(32, 64, "
                                               "128) if predicts else None, 'kept_bytes_big': predicted_kept_bytes(200000, 2048, 8192) if predicts else None}\n"
                                               ">>> got['cpu_seconds'] = sum(os.times()[:4]) - start\n"
                                               '>>> want = {}\n'
                                               '>>> keep_products = keep_ops_policy([torch.ops.aten.mm.default])\n'
                                               '>>> traced = trace_step(lambda x, w1, w2: checkpoint(two_matmuls, x, w1, w2, use_reentrant=False, '
                                               'context_fn=partial(create_selective_checkpoint_contexts, keep_products)), matmul_inputs)\n'
                                               ">>> want['recomputations'] = {op: traced.recomputations(op) for op in ('mm', 'relu')}\n"
                                               ">>> want['kept_bytes'] = float(traced.kept_bytes)\n"
                                               '>>> got, want = (plain(got), plain(want))\n'
                                               ">>> counts = got['recomputations']\n"
                                               '>>> assert got[\'kind\'] == \'dict\', phrase(\'predicted_recomputations should be a dict: a whole number for "mm", one for "relu"\')\n'
                                               '>>> assert type(counts) is dict and set(counts) == {\'mm\', \'relu\'}, phrase(\'predict for exactly two ops: "mm" and "relu"\')\n'
                                               ">>> assert all((type(n) is int and n >= 0 for n in counts.values())), phrase('counts are whole numbers')\n"
                                               ">>> assert type(got['kept_bytes']) in (int, float) and got['kept_bytes'] >= 0, phrase('predicted_kept_bytes(batch, width, hidden) should give a number "
                                               "of bytes')\n"
                                               ">>> assert got['cpu_seconds'] < 0.5, phrase('{name} took {seconds} s of CPU time: predict from the numbers it is given, do not run what it predicts', "
                                               "name='predicted_kept_bytes', seconds=round(got['cpu_seconds'], 1))\n"
                                               ">>> check_prediction('predicted_recomputations', got['recomputations'], want['recomputations'], why=phrase('Re-read section 2, If B is expensive to "
                                               "recompute, keep B: what the policy keeps, and what ran again.'))\n"
                                               '>>> check_prediction(\'predicted_kept_bytes(32, 64, 128)\', got[\'kept_bytes\'], want[\'kept_bytes\'], rel=0.01, why=phrase("Re-read section 2\'s box '
                                               'How we measured: where selective checkpointing keeps B."))\n',
                                       'hidden': False,
                                       'locked': False},
                                   {   'code': '>>> import os\n'
                                               '>>> from functools import partial\n'
                                               '>>> import torch\n'
                                               '>>> from torch.utils.checkpoint import checkpoint, create_selective_checkpoint_contexts\n'
                                               '>>> from effitrain_lessons.first_principles.checkpointing import keep_ops_policy, two_matmuls, two_matmuls_inputs\n'
                                               '>>> from effitrain_lessons.shared.judging import plain\n'
                                               '>>> from effitrain_lessons.shared.tracing import trace_step\n'
                                               '>>> sizes = [(16, 32, 96), (8, 128, 16)]\n'
                                               '>>> start = sum(os.times()[:4])\n'
                                               ">>> got = {'kept_bytes': [predicted_kept_bytes(*size) for size in sizes], 'kept_bytes_big': predicted_kept_bytes(400000, 4096, 1024), "
                                               "'recomputations': predicted_recomputations}\n"
                                               ">>> got['cpu_seconds'] = sum(os.times()[:4]) - start\n"
                                               '>>> want = {}\n'
                                               ">>> want['kept_bytes'], want['recomputations'] = ([], [])\n"
                                               '>>> for batch, width, hidden in sizes:\n'
                                               '...     traced = trace_step(lambda x, w1, w2: checkpoint(two_matmuls, x, w1, w2, use_reentrant=False, '
                                               'context_fn=partial(create_selective_checkpoint_contexts, keep_ops_policy([torch.ops.aten.mm.default]))), two_matmuls_inputs(batch=batch, width=width, '
                                               'hidden=hidden, seed=3))\n'
                                               "...     want['kept_bytes'].append(traced.kept_bytes)\n"
                                               "...     want['recomputations'].append({op: traced.recomputations(op) for op in ('mm', 'relu')})\n"
                                               '>>> got, want = (plain(got), plain(want))\n'
                                               ">>> assert got['cpu_seconds'] < 0.5\n"
                                               ">>> assert all((type(n) in (int, float) for n in got['kept_bytes'] + [got['kept_bytes_big']]))\n"
                                               ">>> assert all((abs(g - w) <= 0.01 * w for g, w in zip(got['kept_bytes'], want['kept_bytes'])))\n"
                                               ">>> assert all((got['recomputations'] == measured for measured in want['recomputations']))\n",
                                       'hidden': True,
                                       'locked': False}],
                      'scored': True,
                      'setup': '',
                      'teardown': '',
                      'type': 'doctest'}]}
