OK_FORMAT = True

test = {   'name': 'q_communication',
    'points': 3,
    'suites': [   {   'cases': [   {   'code': '>>> from effitrain_lessons.checks import check_prediction\n'
                                               '>>> from effitrain_lessons.diloco import DiLoCoConfig\n'
                                               '>>> from effitrain_lessons.distributed_runs import launch\n'
                                               '>>> from effitrain_lessons.i18n import phrase\n'
                                               '>>> from effitrain_lessons.lesson_code.lesson_05 import train as lesson_train\n'
                                               ">>> assert type(communication(20, 6, 2, False, 'fp32')) is dict, phrase('communication(...) should return a dict with the keys synchronizations, calls "
                                               "and bytes.')\n"
                                               '>>> counted = launch([DiLoCoConfig(h=6, steps=20, layers=1, bucketed=False)], lesson_train, num_processes=2)\n'
                                               '>>> check_prediction(\'communication(20, 6, 2, False, "fp32")\', communication(20, 6, 2, False, \'fp32\'), {\'synchronizations\': '
                                               "counted[0][0].synchronizations, 'calls': counted[0][0].allreduce_calls, 'bytes': counted[0][0].allreduce_bytes}, why=phrase('Counted in process 0 of "
                                               '2, 20 steps at H = 6, one call per tensor, fp32. Re-read section 4 for when DiLoCo synchronizes (and whether it does on exit), section 5 for the '
                                               "calls, section 6 for the bytes.'))\n",
                                       'hidden': False,
                                       'locked': False},
                                   {   'code': '>>> from effitrain_lessons.diloco import DiLoCoConfig\n'
                                               '>>> from effitrain_lessons.distributed_runs import launch\n'
                                               '>>> from effitrain_lessons.lesson_code.lesson_05 import train as lesson_train\n'
                                               ">>> for counted, (steps, h, processes, bucketed, precision) in ((launch([DiLoCoConfig(h=5, steps=23, layers=1, precision='bf16')], lesson_train, "
                                               "num_processes=3)[0], (23, 5, 3, True, 'bf16')), (launch([DiLoCoConfig(h=4, steps=12, layers=1, bucketed=False, precision='fp16')], lesson_train, "
                                               "num_processes=2)[0], (12, 4, 2, False, 'fp16'))):\n"
                                               "...     assert all((communication(steps, h, processes, bucketed, precision) == {'synchronizations': report.synchronizations, 'calls': "
                                               "report.allreduce_calls, 'bytes': report.allreduce_bytes} for report in counted)), (steps, h, processes, bucketed, precision)\n",
                                       'hidden': True,
                                       'locked': False}],
                      'scored': True,
                      'setup': '',
                      'teardown': '',
                      'type': 'doctest'}]}
