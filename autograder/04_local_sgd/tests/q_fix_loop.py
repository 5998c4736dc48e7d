OK_FORMAT = True

test = {   'name': 'q_fix_loop',
    'points': 3,
    'suites': [   {   'cases': [   {   'code': '>>> from effitrain_lessons.i18n import phrase\n'
                                               '>>> from effitrain_lessons.local_sgd import run_custom_loop\n'
                                               '>>> counted = run_custom_loop(fixed_loop, batches=12, num_processes=2)\n'
                                               '>>> assert all((type(r.synchronizations) is int for r in counted))\n'
                                               '>>> assert [r.synchronizations for r in counted] == [4, 4] and (not any((r.gradient_allreduces for r in counted))), phrase("counted: the processes '
                                               'averaged {averaged} times, process 0 after steps {steps} (-1: on exit), and all-reduced {gradients} gradients. Re-read the question for what they '
                                               'should do, and section 2\'s loop: where, and how often, does it step LocalSGD?", averaged=[r.synchronizations for r in counted], '
                                               'steps=counted[0].sync_steps, gradients=len(counted[0].gradient_allreduces))\n',
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
