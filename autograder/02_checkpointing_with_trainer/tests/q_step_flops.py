OK_FORMAT = True

test = {   'name': 'q_step_flops',
    'points': 2,
    'suites': [   {   'cases': [   {   'code': '>>> from effitrain_lessons.shared.checks import check_prediction\n'
                                               '>>> from effitrain_lessons.shared.data import tokenized_mrpc\n'
                                               '>>> from effitrain_lessons.shared.i18n import phrase\n'
                                               '>>> from effitrain_lessons.shared.judging import plain\n'
                                               '>>> from effitrain_lessons.shared.memory import count_step\n'
                                               '>>> from effitrain_lessons.with_trainer.trainer import fresh_model\n'
                                               ">>> got = {'mflop': predicted_mflop}\n"
                                               '>>> want = {}\n'
                                               ">>> flops_model = fresh_model('tiny', seed=0)\n"
                                               '>>> flops_model.config.use_cache = False\n'
                                               '>>> flops_model.activation_checkpointing_enable()\n'
                                               '>>> _ = flops_model.train()\n'
                                               ">>> flops_rows = tokenized_mrpc()['train']\n"
                                               '>>> with count_step() as counted:\n'
                                               '...     for start in (0, 16):\n'
                                               '...         flops_model(**flops_rows[start:start + 16]).loss.backward()\n'
                                               ">>> want['mflop'] = counted.flops / 1000000.0\n"
                                               '>>> got, want = (plain(got), plain(want))\n'
                                               ">>> check_prediction('predicted_mflop', got['mflop'], want['mflop'], rel=0.01, why=phrase('Re-read section 4 (the FLOPs row, and what checkpointing "
                                               "adds) and section 5 (what one optimizer step runs).'))\n",
                                       'hidden': False,
                                       'locked': False},
                                   {   'code': '>>> from effitrain_lessons.shared.data import tokenized_mrpc\n'
                                               '>>> from effitrain_lessons.shared.judging import plain\n'
                                               '>>> from effitrain_lessons.shared.memory import count_step\n'
                                               '>>> from effitrain_lessons.with_trainer.trainer import fresh_model\n'
                                               ">>> got = {'mflop': predicted_mflop}\n"
                                               '>>> want = {}\n'
                                               ">>> flops_model = fresh_model('tiny', seed=1)\n"
                                               '>>> flops_model.config.use_cache = False\n'
                                               '>>> flops_model.activation_checkpointing_enable()\n'
                                               '>>> _ = flops_model.train()\n'
                                               ">>> flops_rows = tokenized_mrpc()['validation']\n"
                                               '>>> with count_step() as counted:\n'
                                               '...     for start in (0, 16):\n'
                                               '...         flops_model(**flops_rows[start:start + 16]).loss.backward()\n'
                                               ">>> want['mflop'] = counted.flops / 1000000.0\n"
                                               '>>> got, want = (plain(got), plain(want))\n'
                                               ">>> assert type(got['mflop']) in (int, float)\n"
                                               ">>> assert abs(got['mflop'] - want['mflop']) <= 0.01 * want['mflop']\n",
                                       'hidden': True,
                                       'locked': False}],
                      'scored': True,
                      'setup': '',
                      'teardown': '',
                      'type': 'doctest'}]}
