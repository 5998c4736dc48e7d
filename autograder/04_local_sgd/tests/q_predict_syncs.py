OK_FORMAT = True

test = {   'name': 'q_predict_syncs',
    'points': 2,
    'suites': [   {   'cases': [   {   'code': '>>> from effitrain_lessons.checks import check_prediction\n'
                                               '>>> from effitrain_lessons.distributed_runs import RunConfig, launch\n'
                                               '>>> from effitrain_lessons.i18n import phrase\n'
                                               '>>> from effitrain_lessons.lesson_code.lesson_04 import train as lesson_train\n'
                                               ">>> check_runs = launch([RunConfig(mode='local_sgd', k=6, steps=20, layers=1), RunConfig(mode='ddp', steps=20, layers=1)], lesson_train, "
                                               'num_processes=2)\n'
                                               ">>> check_prediction('predicted_local_syncs', predicted_local_syncs, check_runs[0][0].synchronizations, why=phrase('Counted in process 0. Re-read "
                                               "section 3, Communication, counted: when LocalSGD averages, and what it does on exit.'))\n"
                                               ">>> check_prediction('predicted_ddp_syncs', predicted_ddp_syncs, check_runs[1][0].synchronizations, why=phrase('Counted in process 0: the steps whose "
                                               "backward all-reduced gradients.'))\n",
                                       'hidden': False,
                                       'locked': False},
                                   {   'code': '>>> from effitrain_lessons.distributed_runs import RunConfig, launch\n'
                                               '>>> from effitrain_lessons.lesson_code.lesson_04 import train as lesson_train\n'
                                               '>>> assert type(predicted_local_syncs) is int and type(predicted_ddp_syncs) is int\n'
                                               ">>> counted = launch([RunConfig(mode='local_sgd', k=6, steps=20, layers=1), RunConfig(mode='ddp', steps=20, layers=1)], lesson_train, "
                                               'num_processes=3)\n'
                                               '>>> assert [report.synchronizations for report in counted[0]] == [predicted_local_syncs] * 3\n'
                                               '>>> assert [report.synchronizations for report in counted[1]] == [predicted_ddp_syncs] * 3\n',
                                       'hidden': True,
                                       'locked': False}],
                      'scored': True,
                      'setup': '',
                      'teardown': '',
                      'type': 'doctest'}]}
