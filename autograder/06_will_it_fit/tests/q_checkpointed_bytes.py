OK_FORMAT = True

test = {   'name': 'q_checkpointed_bytes',
    'points': 3,
    'suites': [   {   'cases': [   {   'code': '>>> import torch\n'
                                               '>>> from effitrain_lessons.shared.checks import check_prediction\n'
                                               '>>> from effitrain_lessons.shared.i18n import phrase\n'
                                               '>>> from effitrain_lessons.shared.judging import plain\n'
                                               '>>> from effitrain_lessons.shared.memory import record_saved_tensors\n'
                                               '>>> from effitrain_lessons.will_it_fit.plan import build\n'
                                               ">>> got = {'prediction': predicted_checkpointed}\n"
                                               '>>> want = {}\n'
                                               ">>> check_model = build('bert-base-uncased', attention='eager', num_hidden_layers=3, vocab_size=2048, seed=0)\n"
                                               '>>> check_model.config.use_cache = False\n'
                                               '>>> check_model.activation_checkpointing_enable()\n'
                                               '>>> _ = check_model.train()\n'
                                               '>>> with record_saved_tensors(check_model) as check_log:\n'
                                               '...     check_loss = check_model(input_ids=torch.randint(2048, (2, 128), generator=torch.Generator().manual_seed(3)), labels=torch.zeros(2, '
                                               'dtype=torch.long)).loss\n'
                                               ">>> want['3 layers'] = check_log.total_bytes\n"
                                               '>>> got, want = (plain(got), plain(want))\n'
                                               ">>> layer_keys = {'3 layers', '4 layers'}\n"
                                               ">>> assert type(got['prediction']) is dict and set(got['prediction']) == layer_keys, phrase('predicted_checkpointed should be a dict with two "
                                               'predictions: {{"3 layers": ..., "4 layers": ...}}.\')\n'
                                               '>>> check_prediction(\'predicted_checkpointed["3 layers"]\', got[\'prediction\'][\'3 layers\'], want[\'3 layers\'], rel=0.01, why=phrase(\'Re-read '
                                               "section 2.1, Parameters, gradients, optimizer state, and section 4, What each lever buys: what checkpointing keeps of each layer.'))\n",
                                       'hidden': False,
                                       'locked': False},
                                   {   'code': '>>> import torch\n'
                                               '>>> from effitrain_lessons.shared.judging import plain\n'
                                               '>>> from effitrain_lessons.shared.memory import record_saved_tensors\n'
                                               '>>> from effitrain_lessons.will_it_fit.plan import build\n'
                                               ">>> got = {'prediction': predicted_checkpointed}\n"
                                               '>>> want = {}\n'
                                               ">>> hidden_model = build('bert-base-uncased', attention='eager', num_hidden_layers=4, vocab_size=2048, seed=1)\n"
                                               '>>> hidden_model.config.use_cache = False\n'
                                               '>>> hidden_model.activation_checkpointing_enable()\n'
                                               '>>> _ = hidden_model.train()\n'
                                               '>>> with record_saved_tensors(hidden_model) as hidden_log:\n'
                                               '...     hidden_loss = hidden_model(input_ids=torch.randint(2048, (3, 64), generator=torch.Generator().manual_seed(4)), labels=torch.zeros(3, '
                                               'dtype=torch.long)).loss\n'
                                               ">>> want['4 layers'] = hidden_log.total_bytes\n"
                                               '>>> got, want = (plain(got), plain(want))\n'
                                               ">>> prediction = got['prediction']['4 layers'] if type(got['prediction']) is dict else None\n"
                                               '>>> assert type(prediction) in (int, float)\n'
                                               ">>> assert abs(prediction - want['4 layers']) <= 0.01 * want['4 layers']\n",
                                       'hidden': True,
                                       'locked': False}],
                      'scored': True,
                      'setup': '',
                      'teardown': '',
                      'type': 'doctest'}]}
