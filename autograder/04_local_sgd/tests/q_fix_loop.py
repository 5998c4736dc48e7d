OK_FORMAT = True

test = {   'name': 'q_fix_loop',
    'points': 3,
    'suites': [   {   'cases': [   {'code': ">>> assert callable(fixed_loop), 'fixed_loop should be a function'\n", 'hidden': False, 'locked': False},
                                   {   'code': '>>> from effitrain_lessons.local_sgd import run_custom_loop\n'
                                               '>>> counted = run_custom_loop(fixed_loop, batches=12, num_processes=2)\n'
                                               '>>> assert all((report.synchronizations == 4 for report in counted)), [report.sync_steps for report in counted]\n'
                                               '>>> assert all((len(report.gradient_allreduces) == 0 for report in counted))\n'
                                               '>>> assert len({report.final_fingerprint for report in counted}) == 1\n',
                                       'hidden': True,
                                       'locked': False}],
                      'scored': True,
                      'setup': '',
                      'teardown': '',
                      'type': 'doctest'}]}
