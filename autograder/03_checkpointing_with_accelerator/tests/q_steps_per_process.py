OK_FORMAT = True

test = {   'name': 'q_steps_per_process',
    'points': 2,
    'suites': [   {   'cases': [   {   'code': '>>> from effitrain_lessons.checks import check_prediction\n'
                                               '>>> from effitrain_lessons.i18n import phrase\n'
                                               '>>> from effitrain_lessons.train_loop import optimizer_steps_on_one_process\n'
                                               ">>> check_prediction('steps_per_process(40, 4, 2, 3)', steps_per_process(40, 4, 2, 3), optimizer_steps_on_one_process(40, 4, 2, 3), "
                                               'why=phrase("Counted: the optimizer steps of one process\'s shard of 40 batches, 3 processes, 4 micro-batches per step, 2 epochs. Re-read section 6 on '
                                               'what prepare() does to the dataloader, and section 2 on how micro-batches become optimizer steps."))\n',
                                       'hidden': False,
                                       'locked': False},
                                   {   'code': '>>> from effitrain_lessons.train_loop import optimizer_steps_on_one_process\n'
                                               '>>> for batches, accumulation, epochs, processes in [(10, 3, 2, 4), (7, 2, 3, 2), (12, 1, 1, 1), (9, 2, 1, 2)]:\n'
                                               '...     assert type(steps_per_process(batches, accumulation, epochs, processes)) is int\n'
                                               '...     assert steps_per_process(batches, accumulation, epochs, processes) == optimizer_steps_on_one_process(batches, accumulation, epochs, '
                                               'processes), (batches, accumulation, epochs, processes)\n',
                                       'hidden': True,
                                       'locked': False}],
                      'scored': True,
                      'setup': '',
                      'teardown': '',
                      'type': 'doctest'}]}
