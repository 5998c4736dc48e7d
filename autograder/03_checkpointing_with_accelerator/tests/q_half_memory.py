OK_FORMAT = True

test = {   'name': 'q_half_memory',
    'points': 3,
    'suites': [   {   'cases': [   {   'code': '>>> import os\n'
                                               '>>> from effitrain_lessons.shared.checks import check_prediction\n'
                                               '>>> from effitrain_lessons.shared.data import tokenized_mrpc\n'
                                               '>>> from effitrain_lessons.shared.i18n import phrase\n'
                                               '>>> from effitrain_lessons.shared.judging import plain\n'
                                               '>>> from effitrain_lessons.shared.models import tiny_bert\n'
                                               '>>> from effitrain_lessons.with_accelerator.layers import fewest_layers\n'
                                               '>>> start = sum(os.times()[:4])\n'
                                               ">>> got = {'prediction': half_memory(12), 'prediction_big': half_memory(10000)}\n"
                                               ">>> got['cpu_seconds'] = sum(os.times()[:4]) - start\n"
                                               '>>> want = {}\n'
                                               ">>> measured = fewest_layers(lambda: tiny_bert(num_hidden_layers=12, dropout=False), tokenized_mrpc()['train'][:16])\n"
                                               ">>> want['layers'], want['flops'] = (measured.layers, measured.flops)\n"
                                               '>>> got, want = (plain(got), plain(want))\n'
                                               ">>> assert type(got['prediction']) is dict and set(got['prediction']) == {'layers', 'flops'}, phrase('half_memory(12) should return a dict with two "
                                               'predictions: {{"layers": ..., "flops": ...}}.\')\n'
                                               ">>> assert got['cpu_seconds'] < 0.5, phrase('{name} took {seconds} s of CPU time: predict from the numbers it is given, do not run what it predicts', "
                                               "name='half_memory', seconds=round(got['cpu_seconds'], 1))\n"
                                               ">>> why = phrase('Re-read section 3, Checkpointing changes memory, not the math: what a checkpointed layer still keeps, and what its recomputation "
                                               "costs.')\n"
                                               '>>> check_prediction(\'half_memory(12)["layers"]\', got[\'prediction\'][\'layers\'], want[\'layers\'], why=why)\n'
                                               '>>> check_prediction(\'half_memory(12)["flops"]\', got[\'prediction\'][\'flops\'], want[\'flops\'], rel=0.01, why=why)\n',
                                       'hidden': False,
                                       'locked': False},
                                   {   'code': '>>> import os\n'
                                               '>>> from effitrain_lessons.shared.data import tokenized_mrpc\n'
                                               '>>> from effitrain_lessons.shared.judging import finite, plain\n'
                                               '>>> from effitrain_lessons.shared.models import tiny_bert\n'
                                               '>>> from effitrain_lessons.with_accelerator.layers import fewest_layers\n'
                                               '>>> start = sum(os.times()[:4])\n'
                                               ">>> got = {'prediction': half_memory(9), 'prediction_big': half_memory(20000)}\n"
                                               ">>> got['cpu_seconds'] = sum(os.times()[:4]) - start\n"
                                               '>>> want = {}\n'
                                               ">>> measured = fewest_layers(lambda: tiny_bert(num_hidden_layers=9, dropout=False), tokenized_mrpc()['train'][:16])\n"
                                               ">>> want['layers'], want['flops'] = (measured.layers, measured.flops)\n"
                                               '>>> got, want = (plain(got), plain(want))\n'
                                               ">>> assert got['cpu_seconds'] < 0.5\n"
                                               ">>> for prediction in (got['prediction'], got['prediction_big']):\n"
                                               "...     assert type(prediction) is dict and set(prediction) == {'layers', 'flops'}\n"
                                               "...     assert type(prediction['layers']) is int and type(prediction['flops']) in (int, float)\n"
                                               "...     assert finite([prediction['flops']])\n"
                                               ">>> assert got['prediction']['layers'] == want['layers']\n"
                                               ">>> assert abs(got['prediction']['flops'] - want['flops']) <= 0.01 * want['flops']\n",
                                       'hidden': True,
                                       'locked': False}],
                      'scored': True,
                      'setup': '',
                      'teardown': '',
                      'type': 'doctest'}]}
