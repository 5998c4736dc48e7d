OK_FORMAT = True

test = {   'name': 'q_half_memory',
    'points': 3,
    'suites': [   {   'cases': [   {   'code': '>>> from effitrain_lessons.shared.checks import check_prediction\n'
                                               '>>> from effitrain_lessons.shared.data import tokenized_mrpc\n'
                                               '>>> from effitrain_lessons.shared.i18n import phrase\n'
                                               '>>> from effitrain_lessons.shared.judging import plain\n'
                                               '>>> from effitrain_lessons.shared.models import tiny_bert\n'
                                               '>>> from effitrain_lessons.with_accelerator.layers import fewest_layers\n'
                                               ">>> got = {'prediction': predicted_12}\n"
                                               '>>> want = {}\n'
                                               ">>> measured = fewest_layers(lambda: tiny_bert(num_hidden_layers=12, dropout=False), tokenized_mrpc()['train'][:16])\n"
                                               ">>> want['layers'], want['flops'] = (measured.layers, measured.flops)\n"
                                               '>>> got, want = (plain(got), plain(want))\n'
                                               ">>> assert type(got['prediction']) is dict and set(got['prediction']) == {'layers', 'flops'}, phrase('predicted_12 should be a dict with two "
                                               'predictions: {{"layers": ..., "flops": ...}}.\')\n'
                                               ">>> why = phrase('Re-read section 3, Checkpointing changes memory, not the math: what a checkpointed layer still keeps, and what its recomputation "
                                               "costs.')\n"
                                               '>>> check_prediction(\'predicted_12["layers"]\', got[\'prediction\'][\'layers\'], want[\'layers\'], why=why)\n'
                                               '>>> check_prediction(\'predicted_12["flops"]\', got[\'prediction\'][\'flops\'], want[\'flops\'], rel=0.01, why=why)\n',
                                       'hidden': False,
                                       'locked': False},
                                   {   'code': '>>> from effitrain_lessons.shared.data import tokenized_mrpc\n'
                                               '>>> from effitrain_lessons.shared.judging import plain\n'
                                               '>>> from effitrain_lessons.shared.models import tiny_bert\n'
                                               '>>> from effitrain_lessons.with_accelerator.layers import fewest_layers\n'
                                               ">>> got = {'prediction': predicted_9}\n"
                                               '>>> want = {}\n'
                                               ">>> measured = fewest_layers(lambda: tiny_bert(num_hidden_layers=9, dropout=False), tokenized_mrpc()['train'][:16])\n"
                                               ">>> want['layers'], want['flops'] = (measured.layers, measured.flops)\n"
                                               '>>> got, want = (plain(got), plain(want))\n'
                                               ">>> assert type(got['prediction']) is dict and set(got['prediction']) == {'layers', 'flops'}\n"
                                               ">>> assert got['prediction']['layers'] == want['layers']\n"
                                               ">>> flops = got['prediction']['flops']\n"
                                               ">>> assert type(flops) in (int, float) and abs(flops - want['flops']) <= 0.01 * want['flops']\n",
                                       'hidden': True,
                                       'locked': False}],
                      'scored': True,
                      'setup': '',
                      'teardown': '',
                      'type': 'doctest'}]}
