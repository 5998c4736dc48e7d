OK_FORMAT = True

test = {   'name': 'q_fix_loop',
    'points': 3,
    'suites': [   {   'cases': [   {   'code': '>>> from effitrain_lessons.local_sgd import run_custom_loop\n'
                                               '>>> counted = run_custom_loop(fixed_loop, batches=12, num_processes=2)\n'
                                               '>>> assert all((type(r.synchronizations) is int for r in counted))\n'
                                               ">>> assert [r.synchronizations for r in counted] == [4, 4], f'the processes averaged {counted[0].synchronizations} times, at steps "
                                               "{counted[0].sync_steps}'\n",
                                       'hidden': False,
                                       'locked': False},
                                   {   'code': '>>> from effitrain_lessons.local_sgd import run_custom_loop\n'
                                               '>>> counted = run_custom_loop(fixed_loop, batches=10, num_processes=2)\n'
                                               '>>> assert all((type(r.synchronizations) is int and r.synchronizations == 10 // 4 + 1 and r.parameter_allreduces and (not r.gradient_allreduces) for r '
                                               'in counted)) and len({r.final_fingerprint for r in counted}) == 1\n',
                                       'hidden': True,
                                       'locked': False}],
                      'scored': True,
                      'setup': '',
                      'teardown': '',
                      'type': 'doctest'}]}
