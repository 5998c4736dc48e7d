OK_FORMAT = True

test = {   'name': 'q_trade_places',
    'points': 2,
    'suites': [   {   'cases': [   {   'code': '>>> import os\n'
                                               '>>> import torch\n'
                                               '>>> from effitrain_lessons.shared.checks import check_prediction\n'
                                               '>>> from effitrain_lessons.shared.i18n import phrase\n'
                                               '>>> from effitrain_lessons.shared.judging import plain\n'
                                               '>>> from effitrain_lessons.shared.memory import record_saved_tensors\n'
                                               '>>> start = sum(os.times()[:4])\n'
                                               '>>> ran = []\n'
                                               '>>> watch = torch.nn.modules.module.register_module_forward_pre_hook(lambda *args: ran.append(1))\n'
                                               '>>> try:\n'
                                               "...     got = {'bytes': predicted_saved_bytes(32, 8)}\n"
                                               '...     if not ran:\n'
                                               "...         got['bytes_big'] = predicted_saved_bytes(4096, 512)\n"
                                               '... finally:\n'
                                               '...     watch.remove()\n'
                                               ">>> got['cpu_seconds'] = sum(os.times()[:4]) - start\n"
                                               ">>> got['ran_model'] = bool(ran)\n"
                                               '>>> want = {}\n'
                                               '>>> with record_saved_tensors(model) as log:\n'
                                               '...     model(**random_batch(32, 8))\n'
                                               ">>> want['bytes'] = float(log.total_bytes)\n"
                                               '>>> got, want = (plain(got), plain(want))\n'
                                               ">>> assert not got['ran_model'], phrase('predicted_saved_bytes ran a model: predict from what section 4 measured, without running it')\n"
                                               ">>> assert got['cpu_seconds'] < 0.5, phrase('{name} took {seconds} s of CPU time: predict from the numbers it is given, do not run what it predicts', "
                                               "name='predicted_saved_bytes', seconds=round(got['cpu_seconds'], 1))\n"
                                               ">>> check_prediction('predicted_saved_bytes(32, 8)', got['bytes'], want['bytes'], rel=0.05, why=phrase('Re-read section 4: what grew when the "
                                               "sequences grew; and exercise 2: what the attention computes a score for.'))\n",
                                       'hidden': False,
                                       'locked': False},
                                   {   'code': '>>> import os\n'
                                               '>>> import torch\n'
                                               '>>> from effitrain_lessons.shared.judging import finite, plain\n'
                                               '>>> from effitrain_lessons.shared.memory import record_saved_tensors\n'
                                               '>>> shapes = [(2, 128), (64, 4), (4, 100)]\n'
                                               '>>> start = sum(os.times()[:4])\n'
                                               '>>> ran = []\n'
                                               '>>> watch = torch.nn.modules.module.register_module_forward_pre_hook(lambda *args: ran.append(1))\n'
                                               '>>> try:\n'
                                               "...     got = {'bytes': [predicted_saved_bytes(sequences, tokens) for sequences, tokens in shapes]}\n"
                                               '...     if not ran:\n'
                                               "...         got['bytes_big'] = predicted_saved_bytes(8192, 512)\n"
                                               '... finally:\n'
                                               '...     watch.remove()\n'
                                               ">>> got['cpu_seconds'] = sum(os.times()[:4]) - start\n"
                                               ">>> got['ran_model'] = bool(ran)\n"
                                               '>>> want = {}\n'
                                               ">>> want['bytes'] = []\n"
                                               '>>> for sequences, tokens in shapes:\n'
                                               '...     with record_saved_tensors(model) as log:\n'
                                               '...         model(**random_batch(sequences, tokens))\n'
                                               "...     want['bytes'].append(log.total_bytes)\n"
                                               '>>> got, want = (plain(got), plain(want))\n'
                                               ">>> assert not got['ran_model'] and got['cpu_seconds'] < 0.5\n"
                                               ">>> assert type(got['bytes_big']) in (int, float) and finite([got['bytes_big']])\n"
                                               ">>> assert type(got['bytes']) is list and len(got['bytes']) == len(want['bytes'])\n"
                                               ">>> assert all((type(n) in (int, float) for n in got['bytes'])) and finite(got['bytes'])\n"
                                               ">>> assert all((abs(g - w) <= 0.05 * w for g, w in zip(got['bytes'], want['bytes'])))\n",
                                       'hidden': True,
                                       'locked': False}],
                      'scored': True,
                      'setup': '',
                      'teardown': '',
                      'type': 'doctest'}]}
