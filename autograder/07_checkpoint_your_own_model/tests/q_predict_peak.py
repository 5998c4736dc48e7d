OK_FORMAT = True

test = {   'name': 'q_predict_peak',
    'points': 3,
    'suites': [   {   'cases': [   {   'code': '>>> import torch\n'
                                               '>>> from effitrain_lessons.own_model.measure import language_model_batches, next_token_loss, peak_bytes, token_stream\n'
                                               '>>> from effitrain_lessons.shared.checks import check_prediction\n'
                                               '>>> from effitrain_lessons.shared.i18n import phrase\n'
                                               '>>> from effitrain_lessons.shared.judging import plain\n'
                                               ">>> got = {'prediction': predicted_peak_mib}\n"
                                               '>>> want = {}\n'
                                               '>>> check_stream = token_stream()\n'
                                               '>>> torch.manual_seed(0)\n'
                                               '>>> check_model = GPT(int(check_stream.max()) + 1, SEQ, WIDTH, HEADS, hidden=[4 * WIDTH] * LAYERS)\n'
                                               '>>> check_model = check_model.to(device)\n'
                                               '>>> check_model.checkpointed = set(range(LAYERS))\n'
                                               '>>> check_ids, check_targets = (t.to(device) for t in language_model_batches(check_stream, 4, SEQ, seed=5)[0])\n'
                                               '>>> check_optimizer = torch.optim.AdamW(check_model.parameters(), lr=0.001)\n'
                                               '>>> def check_step():\n'
                                               '...     next_token_loss(check_model(check_ids), check_targets).backward()\n'
                                               '...     check_optimizer.step()\n'
                                               '...     check_optimizer.zero_grad(set_to_none=True)\n'
                                               ">>> want['batch 4'] = peak_bytes(check_step, device, held=check_model.parameters()) / 2 ** 20\n"
                                               '>>> got, want = (plain(got), plain(want))\n'
                                               ">>> assert type(got['prediction']) is dict and set(got['prediction']) == {'batch 4', 'SGD'}, phrase('predicted_peak_mib should be a dict with two "
                                               'predictions: {{"batch 4": ..., "SGD": ...}}.\')\n'
                                               '>>> check_prediction(\'predicted_peak_mib["batch 4"]\', got[\'prediction\'][\'batch 4\'], want[\'batch 4\'], rel=0.02, why=phrase("Re-read section 5, '
                                               'Saved bytes are not the peak: what the forward and backward passes hold at their peak, and what the optimizer\'s step adds after them."))\n',
                                       'hidden': False,
                                       'locked': False},
                                   {   'code': '>>> import torch\n'
                                               '>>> from effitrain_lessons.own_model.measure import language_model_batches, next_token_loss, peak_bytes, token_stream\n'
                                               '>>> from effitrain_lessons.shared.judging import plain\n'
                                               ">>> got = {'prediction': predicted_peak_mib}\n"
                                               '>>> want = {}\n'
                                               '>>> hidden_stream = token_stream()\n'
                                               '>>> torch.manual_seed(1)\n'
                                               '>>> hidden_model = GPT(int(hidden_stream.max()) + 1, SEQ, WIDTH, HEADS, hidden=[4 * WIDTH] * LAYERS)\n'
                                               '>>> hidden_model = hidden_model.to(device)\n'
                                               '>>> hidden_model.checkpointed = set(range(LAYERS))\n'
                                               '>>> hidden_ids, hidden_targets = (t.to(device) for t in language_model_batches(hidden_stream, 8, SEQ, seed=6)[0])\n'
                                               '>>> hidden_optimizer = torch.optim.SGD(hidden_model.parameters(), lr=0.001, momentum=0.9)\n'
                                               '>>> def hidden_step():\n'
                                               '...     next_token_loss(hidden_model(hidden_ids), hidden_targets).backward()\n'
                                               '...     hidden_optimizer.step()\n'
                                               '...     hidden_optimizer.zero_grad(set_to_none=True)\n'
                                               ">>> want['SGD'] = peak_bytes(hidden_step, device, held=hidden_model.parameters()) / 2 ** 20\n"
                                               '>>> got, want = (plain(got), plain(want))\n'
                                               ">>> prediction = got['prediction']['SGD'] if type(got['prediction']) is dict else None\n"
                                               ">>> assert type(prediction) in (int, float) and abs(prediction - want['SGD']) <= 0.02 * want['SGD']\n",
                                       'hidden': True,
                                       'locked': False}],
                      'scored': True,
                      'setup': '',
                      'teardown': '',
                      'type': 'doctest'}]}
