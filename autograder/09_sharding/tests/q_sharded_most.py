OK_FORMAT = True

test = {   'name': 'q_sharded_most',
    'points': 3,
    'suites': [   {   'cases': [   {   'code': '>>> import os\n'
                                               '>>> import torch\n'
                                               '>>> from effitrain_lessons.shared.checks import check_prediction\n'
                                               '>>> from effitrain_lessons.shared.i18n import phrase\n'
                                               '>>> from effitrain_lessons.shared.judging import plain\n'
                                               '>>> from effitrain_lessons.shared.models import tiny_gpt2, token_batch\n'
                                               '>>> from effitrain_lessons.shared.sharding import measure_sharding\n'
                                               '>>> shapes = [tuple(p.shape) for p in tiny_gpt2().parameters()]\n'
                                               '>>> start = sum(os.times()[:4])\n'
                                               '>>> ran = []\n'
                                               '>>> watch = torch.nn.modules.module.register_module_forward_pre_hook(lambda *args: ran.append(1))\n'
                                               '>>> try:\n'
                                               "...     stages = ('data parallel', 'ZeRO-1', 'ZeRO-3')\n"
                                               '...     got = {stage: predicted_most_held(shapes, stage, 3) for stage in stages}\n'
                                               '...     if not ran:\n'
                                               '...         big = [(50000, 8192)] + [(8192, 8192)] * 4 * 64\n'
                                               "...         got['big'] = predicted_most_held(big, 'ZeRO-3', 8)\n"
                                               '... finally:\n'
                                               '...     watch.remove()\n'
                                               ">>> got['cpu_seconds'] = sum(os.times()[:4]) - start\n"
                                               ">>> got['ran_model'] = bool(ran)\n"
                                               '>>> want = {}\n'
                                               '>>> inputs = token_batch(6, 16, 1000)\n'
                                               ">>> for stage, name in (('data parallel', 'none'), ('ZeRO-1', 'zero1'), ('ZeRO-3', 'zero3')):\n"
                                               "...     want[stage] = float(measure_sharding(tiny_gpt2, inputs, name, 3).most('states'))\n"
                                               '>>> got, want = (plain(got), plain(want))\n'
                                               ">>> assert not got['ran_model'], phrase('predicted_most_held ran a model: predict from the shapes, without running it')\n"
                                               ">>> assert got['cpu_seconds'] < 0.5, phrase('{name} took {seconds} s of CPU time: predict from the numbers it is given, do not run what it predicts', "
                                               "name='predicted_most_held', seconds=round(got['cpu_seconds'], 1))\n"
                                               '>>> check_prediction(\'predicted_most_held(shapes, "data parallel", 3)\', got[\'data parallel\'], want[\'data parallel\'], rel=0.01, '
                                               "why=phrase('Measured in the busiest of 3 processes. Re-read section 1: what one process holds after an AdamW step.'))\n"
                                               '>>> check_prediction(\'predicted_most_held(shapes, "ZeRO-1", 3)\', got[\'ZeRO-1\'], want[\'ZeRO-1\'], rel=0.01, why=phrase(\'Measured in the busiest '
                                               "of 3 processes. Re-read section 2: what ZeRO-1 splits, and how ZeroRedundancyOptimizer hands out whole tensors.'))\n"
                                               '>>> check_prediction(\'predicted_most_held(shapes, "ZeRO-3", 3)\', got[\'ZeRO-3\'], want[\'ZeRO-3\'], rel=0.01, why=phrase(\'Measured in the busiest '
                                               "of 3 processes. Re-read section 2: how fully_shard cuts a tensor whose rows do not divide evenly.'))\n",
                                       'hidden': False,
                                       'locked': False},
                                   {   'code': '>>> import os\n'
                                               '>>> import torch\n'
                                               '>>> from effitrain_lessons.shared.data import tokenized_mrpc\n'
                                               '>>> from effitrain_lessons.shared.judging import finite, plain\n'
                                               '>>> from effitrain_lessons.shared.models import tiny_bert, tiny_gpt2, token_batch\n'
                                               '>>> from effitrain_lessons.shared.sharding import measure_sharding\n'
                                               '>>> def bert():\n'
                                               '...     return tiny_bert(dropout=False, num_hidden_layers=2)\n'
                                               '>>> def gpt2():\n'
                                               '...     return tiny_gpt2(layers=3, width=96, vocabulary=3000)\n'
                                               ">>> rows = tokenized_mrpc()['train'][:8]\n"
                                               ">>> bert_batch = {k: rows[k] for k in ('input_ids', 'token_type_ids', 'attention_mask', 'labels')}\n"
                                               ">>> cases = [(gpt2, token_batch(8, 16, 3000), 'ZeRO-1', 4), (gpt2, token_batch(8, 16, 3000), 'ZeRO-3', 4), (bert, bert_batch, 'ZeRO-3', 3), (bert, "
                                               "bert_batch, 'data parallel', 2)]\n"
                                               '>>> shapes = {build: [tuple(p.shape) for p in build().parameters()] for build in (bert, gpt2)}\n'
                                               '>>> start = sum(os.times()[:4])\n'
                                               '>>> ran = []\n'
                                               '>>> watch = torch.nn.modules.module.register_module_forward_pre_hook(lambda *args: ran.append(1))\n'
                                               '>>> try:\n'
                                               "...     got = {'bytes': [predicted_most_held(shapes[b], stage, n) for b, _in, stage, n in cases]}\n"
                                               '...     if not ran:\n'
                                               "...         got['big'] = predicted_most_held([(128000, 8192)] + [(8192, 8192)] * 400, 'ZeRO-1', 8)\n"
                                               '... finally:\n'
                                               '...     watch.remove()\n'
                                               ">>> got['cpu_seconds'] = sum(os.times()[:4]) - start\n"
                                               ">>> got['ran_model'] = bool(ran)\n"
                                               '>>> want = {}\n'
                                               ">>> names = {'data parallel': 'none', 'ZeRO-1': 'zero1', 'ZeRO-3': 'zero3'}\n"
                                               ">>> want['bytes'] = [measure_sharding(b, inputs, names[stage], n).most('states') for b, inputs, stage, n in cases]\n"
                                               '>>> got, want = (plain(got), plain(want))\n'
                                               ">>> assert not got['ran_model'] and got['cpu_seconds'] < 0.5\n"
                                               ">>> assert type(got['big']) in (int, float) and finite([got['big']])\n"
                                               ">>> assert type(got['bytes']) is list and len(got['bytes']) == len(want['bytes'])\n"
                                               ">>> assert all((type(n) in (int, float) for n in got['bytes'])) and finite(got['bytes'])\n"
                                               ">>> assert all((abs(g - w) <= 0.01 * w for g, w in zip(got['bytes'], want['bytes'])))\n",
                                       'hidden': True,
                                       'locked': False}],
                      'scored': True,
                      'setup': '',
                      'teardown': '',
                      'type': 'doctest'}]}
