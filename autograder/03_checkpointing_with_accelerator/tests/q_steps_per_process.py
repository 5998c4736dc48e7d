OK_FORMAT = True

test = {   'name': 'q_steps_per_process',
    'points': 2,
    'suites': [   {   'cases': [   {   'code': '>>> from effitrain_lessons.shared.checks import check_prediction\n'
                                               '>>> from effitrain_lessons.shared.i18n import phrase\n'
                                               '>>> from effitrain_lessons.shared.judging import plain\n'
                                               '>>> from effitrain_lessons.with_accelerator.train_loop import optimizer_steps_on_one_process\n'
                                               ">>> got = {'steps': steps_per_process(40, 4, 2, 3)}\n"
                                               '>>> want = {}\n'
                                               ">>> want['steps'] = optimizer_steps_on_one_process(40, 4, 2, 3)\n"
                                               '>>> got, want = (plain(got), plain(want))\n'
                                               '>>> check_prediction(\'steps_per_process(40, 4, 2, 3)\', got[\'steps\'], want[\'steps\'], why=phrase("Counted: the optimizer steps of one process\'s '
                                               'shard of 40 batches, 3 processes, 4 micro-batches per step, 2 epochs. Re-read section 6 on what prepare() does to the dataloader, and section 2 on how '
                                               'micro-batches become optimizer steps."))\n',
                                       'hidden': False,
                                       'locked': False},
                                   {   'code': '>>> from effitrain_lessons.shared.judging import plain\n'
                                               '>>> from effitrain_lessons.with_accelerator.train_loop import optimizer_steps_on_one_process\n'
                                               '>>> cases = [(10, 3, 2, 4), (7, 2, 3, 2), (12, 1, 1, 1), (9, 2, 1, 2)]\n'
                                               ">>> got = {'steps': [steps_per_process(*case) for case in cases]}\n"
                                               '>>> want = {}\n'
                                               ">>> want['cases'] = cases\n"
                                               ">>> want['steps'] = [optimizer_steps_on_one_process(*case) for case in cases]\n"
                                               '>>> got, want = (plain(got), plain(want))\n'
                                               ">>> assert type(got['steps']) is list and len(got['steps']) == len(want['steps'])\n"
                                               ">>> for case, steps, steps_counted in zip(want['cases'], got['steps'], want['steps']):\n"
                                               '...     assert type(steps) is int, case\n'
                                               '...     assert steps == steps_counted, case\n',
                                       'hidden': True,
                                       'locked': False}],
                      'scored': True,
                      'setup': '',
                      'teardown': '',
                      'type': 'doctest'}]}
