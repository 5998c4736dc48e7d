OK_FORMAT = True

test = {   'name': 'q_predict_calls',
    'points': 2,
    'suites': [   {   'cases': [   {   'code': '>>> from effitrain_lessons.checks import check_prediction\n'
                                               '>>> from effitrain_lessons.diloco import DiLoCoConfig\n'
                                               '>>> from effitrain_lessons.distributed_runs import launch\n'
                                               '>>> from effitrain_lessons.i18n import phrase\n'
                                               '>>> from effitrain_lessons.lesson_code.lesson_05 import train as lesson_train\n'
                                               '>>> counted = launch([DiLoCoConfig(h=6, steps=20, layers=1), DiLoCoConfig(h=6, steps=20, layers=1, bucketed=False)], lesson_train, num_processes=2)\n'
                                               ">>> check_prediction('predicted_syncs', predicted_syncs, counted[0][0].synchronizations, why=phrase('Counted in process 0. Re-read section 4, Same "
                                               "communication, better loss?: when DiLoCo takes an outer step, and whether it takes one on exit.'))\n"
                                               ">>> check_prediction('predicted_calls_bucketed', predicted_calls_bucketed, counted[0][0].allreduce_calls, why=phrase('Counted in process 0: one flat "
                                               "buffer, one call per synchronization.'))\n"
                                               ">>> check_prediction('predicted_calls_per_tensor', predicted_calls_per_tensor, counted[1][0].allreduce_calls, why=phrase('Counted in process 0. "
                                               "Re-read section 5, Bucketing: how many calls one synchronization makes without a flat buffer.'))\n",
                                       'hidden': False,
                                       'locked': False},
                                   {   'code': '>>> from effitrain_lessons.diloco import DiLoCoConfig\n'
                                               '>>> from effitrain_lessons.distributed_runs import launch\n'
                                               '>>> from effitrain_lessons.lesson_code.lesson_05 import train as lesson_train\n'
                                               '>>> assert type(predicted_syncs) is int and type(predicted_calls_bucketed) is int and (type(predicted_calls_per_tensor) is int)\n'
                                               '>>> counted = launch([DiLoCoConfig(h=6, steps=20, layers=1), DiLoCoConfig(h=6, steps=20, layers=1, bucketed=False)], lesson_train, num_processes=2)\n'
                                               '>>> assert predicted_syncs == counted[0][0].synchronizations == counted[0][1].synchronizations == counted[1][1].synchronizations\n'
                                               '>>> assert predicted_calls_bucketed == counted[0][1].allreduce_calls and predicted_calls_per_tensor == counted[1][1].allreduce_calls\n',
                                       'hidden': True,
                                       'locked': False}],
                      'scored': True,
                      'setup': '',
                      'teardown': '',
                      'type': 'doctest'}]}
