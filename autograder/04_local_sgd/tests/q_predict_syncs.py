OK_FORMAT = True

test = {   'name': 'q_predict_syncs',
    'points': 2,
    'suites': [   {   'cases': [   {   'code': '>>> from effitrain_lessons.local_sgd.runs import LocalSGDConfig\n'
                                               '>>> from effitrain_lessons.local_sgd.saved import train as lesson_train\n'
                                               '>>> from effitrain_lessons.shared.checks import check_prediction\n'
                                               '>>> from effitrain_lessons.shared.distributed_runs import launch\n'
                                               '>>> from effitrain_lessons.shared.i18n import phrase\n'
                                               '>>> from effitrain_lessons.shared.judging import plain\n'
                                               ">>> got = {'predicted': predicted_syncs(24, 7, 2)}\n"
                                               '>>> want = {}\n'
                                               ">>> check_runs = launch([LocalSGDConfig(mode='local_sgd', k=7, steps=24, accumulation=2, layers=1), LocalSGDConfig(mode='ddp', steps=24, "
                                               'accumulation=2, layers=1)], lesson_train, num_processes=3)\n'
                                               ">>> want['local_sgd'] = check_runs[0][0].synchronizations\n"
                                               ">>> want['ddp'] = check_runs[1][0].synchronizations\n"
                                               '>>> got, want = (plain(got), plain(want))\n'
                                               ">>> assert plain(...) not in got['predicted'], phrase('predicted_syncs still returns `...`: replace each `...` with your prediction.')\n"
                                               ">>> check_prediction('predicted_syncs(24, 7, 2)[0], with LocalSGD', got['predicted'][0], want['local_sgd'], why=phrase('Counted in process 0 of 3. "
                                               "Re-read section 6: what local_sgd.step() counts, and what LocalSGD does on exit.'))\n"
                                               ">>> check_prediction('predicted_syncs(24, 7, 2)[1], with data parallel', got['predicted'][1], want['ddp'], why=phrase('Counted in process 0 of 3. "
                                               'Re-read lesson 03, what changes with N processes: at which micro-batches accumulate lets DDP all-reduce. Does the number of processes change '
                                               "that?'))\n",
                                       'hidden': False,
                                       'locked': False},
                                   {   'code': '>>> from effitrain_lessons.local_sgd.runs import LocalSGDConfig\n'
                                               '>>> from effitrain_lessons.local_sgd.saved import train as lesson_train\n'
                                               '>>> from effitrain_lessons.shared.distributed_runs import launch\n'
                                               '>>> from effitrain_lessons.shared.judging import plain\n'
                                               ">>> got = {'predicted': [predicted_syncs(18, 4, 3), predicted_syncs(16, 16, 4)]}\n"
                                               '>>> want = {}\n'
                                               ">>> counted = launch([LocalSGDConfig(mode='local_sgd', k=4, steps=18, accumulation=3, layers=1), LocalSGDConfig(mode='ddp', steps=18, accumulation=3, "
                                               "layers=1), LocalSGDConfig(mode='local_sgd', k=16, steps=16, accumulation=4, layers=1), LocalSGDConfig(mode='ddp', steps=16, accumulation=4, "
                                               'layers=1)], lesson_train, num_processes=2)\n'
                                               ">>> want['counted'] = [[report.synchronizations for report in reports] for reports in counted]\n"
                                               '>>> got, want = (plain(got), plain(want))\n'
                                               ">>> assert all((type(n) is int for pair in got['predicted'] for n in pair))\n"
                                               ">>> assert want['counted'] == [[n] * 2 for pair in got['predicted'] for n in pair]\n",
                                       'hidden': True,
                                       'locked': False}],
                      'scored': True,
                      'setup': '',
                      'teardown': '',
                      'type': 'doctest'}]}
