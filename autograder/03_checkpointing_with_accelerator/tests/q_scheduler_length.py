OK_FORMAT = True

test = {   'name': 'q_scheduler_length',
    'points': 2,
    'suites': [   {   'cases': [   {   'code': ">>> assert type(optimizer_steps(100, 4, 3)) is int, 'optimizer_steps should return a whole number of steps'\n"
                                               ">>> assert optimizer_steps(100, 4, 3) == 75, '100 micro-batches with 4 accumulation steps are 25 optimizer steps per epoch'\n",
                                       'hidden': False,
                                       'locked': False},
                                   {   'code': '>>> from effitrain_lessons.train_loop import measure_schedule\n'
                                               ">>> assert type(optimizer_steps(40, 4, 2)) is int, 'optimizer_steps should return a whole number of steps'\n"
                                               '>>> rates = measure_schedule(optimizer_steps(40, 4, 2), 40, 4, 2)\n'
                                               ">>> assert rates[-1] == 0 and rates[-2] > 0, f'the schedule should reach zero on the last step; it ends at {rates[-1]:.3f} x peak'\n",
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
