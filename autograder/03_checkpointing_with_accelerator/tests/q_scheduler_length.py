OK_FORMAT = True

test = {   'name': 'q_scheduler_length',
    'points': 2,
    'suites': [   {   'cases': [   {   'code': '>>> from effitrain_lessons.checks import check_prediction\n'
                                               '>>> from effitrain_lessons.i18n import phrase\n'
                                               '>>> from effitrain_lessons.train_loop import measure_schedule\n'
                                               '>>> check_rates = measure_schedule(1, 40, 4, 2)\n'
                                               ">>> check_prediction('optimizer_steps(40, 4, 2)', optimizer_steps(40, 4, 2), len(check_rates), why=phrase('Counted: the optimizer steps of a real "
                                               "Accelerate loop over 40 micro-batches, 4 per step, 2 epochs.'))\n",
                                       'hidden': False,
                                       'locked': False},
                                   {   'code': '>>> from effitrain_lessons.i18n import phrase\n'
                                               '>>> from effitrain_lessons.train_loop import measure_schedule\n'
                                               '>>> check_steps = optimizer_steps(10, 3, 2)\n'
                                               ">>> assert type(check_steps) is int, phrase('optimizer_steps should return a whole number of steps')\n"
                                               '>>> check_rates = measure_schedule(check_steps, 10, 3, 2)\n'
                                               '>>> assert check_rates[-1] == 0, phrase("measured with 10 micro-batches per epoch, 3 per step, 2 epochs: a schedule sized {sized} steps is still at '
                                               '{final:.3f} x peak on the loop\'s last optimizer step, so it is too long; it should end at 0 on the last one", sized=check_steps, '
                                               'final=check_rates[-1])\n'
                                               '>>> assert check_rates[-2] > 0, phrase("measured with 10 micro-batches per epoch, 3 per step, 2 epochs: a schedule sized {sized} steps reaches 0 '
                                               'before the loop\'s last optimizer step, so it is too short", sized=check_steps)\n',
                                       'hidden': False,
                                       'locked': False},
                                   {   'code': '>>> from effitrain_lessons.train_loop import measure_schedule\n'
                                               '>>> for batches, accumulation, epochs in [(10, 3, 2), (7, 2, 3), (12, 1, 1), (5, 8, 2)]:\n'
                                               '...     assert type(optimizer_steps(batches, accumulation, epochs)) is int\n'
                                               '...     rates = measure_schedule(optimizer_steps(batches, accumulation, epochs), batches, accumulation, epochs)\n'
                                               '...     assert rates[-1] == 0 and (len(rates) == 1 or rates[-2] > 0), (batches, accumulation, epochs, rates[-2:])\n',
                                       'hidden': True,
                                       'locked': False}],
                      'scored': True,
                      'setup': '',
                      'teardown': '',
                      'type': 'doctest'}]}
