OK_FORMAT = True

test = {   'name': 'q_predict_syncs',
    'points': 2,
    'suites': [   {   'cases': [   {   'code': '>>> from effitrain_lessons.checks import check_prediction\n'
                                               '>>> from effitrain_lessons.distributed_runs import RunConfig, launch\n'
                                               '>>> from effitrain_lessons.i18n import phrase\n'
                                               '>>> from effitrain_lessons.lesson_code.lesson_04 import train as lesson_train\n'
                                               ">>> assert ... not in predicted_syncs(24, 7, 2), phrase('predicted_syncs still returns `...`: replace each `...` with your prediction.')\n"
                                               ">>> check_runs = launch([RunConfig(mode='local_sgd', k=7, steps=24, accumulation=2, layers=1), RunConfig(mode='ddp', steps=24, accumulation=2, "
                                               'layers=1)], lesson_train, num_processes=3)\n'
                                               ">>> check_prediction('predicted_syncs(24, 7, 2)[0], with LocalSGD', predicted_syncs(24, 7, 2)[0], check_runs[0][0].synchronizations, "
                                               "why=phrase('Counted in process 0 of 3. Re-read section 5: what local_sgd.step() counts, and what LocalSGD does on exit.'))\n"
                                               ">>> check_prediction('predicted_syncs(24, 7, 2)[1], with data parallel', predicted_syncs(24, 7, 2)[1], check_runs[1][0].synchronizations, "
                                               "why=phrase('Counted in process 0 of 3. Re-read lesson 03, what changes with N processes: at which micro-batches accumulate lets DDP all-reduce. Does "
                                               "the number of processes change that?'))\n",
                                       'hidden': False,
                                       'locked': False},
                                   {   'code': '>>> from effitrain_lessons.distributed_runs import RunConfig, launch\n'
                                               '>>> from effitrain_lessons.lesson_code.lesson_04 import train as lesson_train\n'
                                               '>>> assert all((type(n) is int for n in predicted_syncs(18, 4, 3) + predicted_syncs(16, 16, 4)))\n'
                                               ">>> counted = launch([RunConfig(mode='local_sgd', k=4, steps=18, accumulation=3, layers=1), RunConfig(mode='ddp', steps=18, accumulation=3, layers=1), "
                                               "RunConfig(mode='local_sgd', k=16, steps=16, accumulation=4, layers=1), RunConfig(mode='ddp', steps=16, accumulation=4, layers=1)], lesson_train, "
                                               'num_processes=2)\n'
                                               '>>> assert [[report.synchronizations for report in reports] for reports in counted] == [[predicted_syncs(18, 4, 3)[0]] * 2, [predicted_syncs(18, 4, '
                                               '3)[1]] * 2, [predicted_syncs(16, 16, 4)[0]] * 2, [predicted_syncs(16, 16, 4)[1]] * 2]\n',
                                       'hidden': True,
                                       'locked': False}],
                      'scored': True,
                      'setup': '',
                      'teardown': '',
                      'type': 'doctest'}]}
