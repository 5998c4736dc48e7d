OK_FORMAT = True

test = {   'name': 'q_communication',
    'points': 3,
    'suites': [   {   'cases': [   {   'code': '>>> from effitrain_lessons.diloco.runs import DiLoCoConfig\n'
                                               '>>> from effitrain_lessons.diloco.saved import train as lesson_train\n'
                                               '>>> from effitrain_lessons.shared.checks import check_prediction\n'
                                               '>>> from effitrain_lessons.shared.distributed_runs import launch\n'
                                               '>>> from effitrain_lessons.shared.i18n import phrase\n'
                                               '>>> from effitrain_lessons.shared.judging import plain\n'
                                               ">>> got = {'answer': communication(20, 6, 2, False, 'fp32')}\n"
                                               '>>> want = {}\n'
                                               '>>> counted = launch([DiLoCoConfig(h=6, steps=20, layers=1, bucketed=False)], lesson_train, num_processes=2)\n'
                                               ">>> want['counted'] = {'synchronizations': counted[0][0].synchronizations, 'calls': counted[0][0].allreduce_calls, 'bytes': "
                                               'counted[0][0].allreduce_bytes}\n'
                                               '>>> got, want = (plain(got), plain(want))\n'
                                               ">>> assert type(got['answer']) is dict, phrase('communication(...) should return a dict with the keys synchronizations, calls and bytes.')\n"
                                               '>>> check_prediction(\'communication(20, 6, 2, False, "fp32")\', got[\'answer\'], want[\'counted\'], why=phrase(\'Counted in process 0 of 2, 20 steps '
                                               'at H = 6, one call per tensor, fp32. Re-read section 4 for when DiLoCo synchronizes (and whether it does on exit), section 5 for the calls, section 6 '
                                               "for the bytes.'))\n",
                                       'hidden': False,
                                       'locked': False},
                                   {   'code': '>>> from effitrain_lessons.diloco.runs import DiLoCoConfig\n'
                                               '>>> from effitrain_lessons.diloco.saved import train as lesson_train\n'
                                               '>>> from effitrain_lessons.shared.distributed_runs import launch\n'
                                               '>>> from effitrain_lessons.shared.judging import plain\n'
                                               ">>> SETTINGS = ((23, 5, 3, True, 'bf16'), (12, 4, 2, False, 'fp16'))\n"
                                               ">>> got = {'answers': [communication(*setting) for setting in SETTINGS]}\n"
                                               '>>> want = {}\n'
                                               ">>> want['settings'] = SETTINGS\n"
                                               ">>> want['counted'] = []\n"
                                               '>>> for steps, h, processes, bucketed, precision in SETTINGS:\n'
                                               '...     config = DiLoCoConfig(h=h, steps=steps, layers=1, bucketed=bucketed, precision=precision)\n'
                                               "...     want['counted'].append([{'synchronizations': report.synchronizations, 'calls': report.allreduce_calls, 'bytes': report.allreduce_bytes} for "
                                               'report in launch([config], lesson_train, num_processes=processes)[0]])\n'
                                               '>>> got, want = (plain(got), plain(want))\n'
                                               ">>> assert type(got['answers']) is list and len(got['answers']) == len(want['counted'])\n"
                                               ">>> for answer, counted, setting in zip(got['answers'], want['counted'], want['settings']):\n"
                                               '...     assert all((answer == report for report in counted)), setting\n',
                                       'hidden': True,
                                       'locked': False}],
                      'scored': True,
                      'setup': '',
                      'teardown': '',
                      'type': 'doctest'}]}
