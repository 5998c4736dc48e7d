OK_FORMAT = True

test = {   'name': 'q_fix_loop',
    'points': 3,
    'suites': [   {   'cases': [   {   'code': '>>> from effitrain_lessons.local_sgd.runs import run_custom_loop\n'
                                               '>>> from effitrain_lessons.shared.i18n import phrase\n'
                                               '>>> from effitrain_lessons.shared.judging import plain\n'
                                               '>>> counted = run_custom_loop(fixed_loop, batches=12, num_processes=2)\n'
                                               ">>> got = {'synchronizations': [r.synchronizations for r in counted], 'sync_steps': counted[0].sync_steps, 'gradient_allreduces': "
                                               '[len(r.gradient_allreduces) for r in counted]}\n'
                                               '>>> want = {}\n'
                                               ">>> want['synchronizations'] = [12 // 4 + 1] * 2\n"
                                               ">>> want['gradient_allreduces'] = [0, 0]\n"
                                               '>>> got, want = (plain(got), plain(want))\n'
                                               ">>> assert all((type(n) is int for n in got['synchronizations']))\n"
                                               '>>> assert got[\'synchronizations\'] == want[\'synchronizations\'] and got[\'gradient_allreduces\'] == want[\'gradient_allreduces\'], phrase("counted: '
                                               'the processes averaged {averaged} times, process 0 after steps {steps} (-1: on exit), and all-reduced {gradients} gradients. Re-read the question for '
                                               'what they should do, and section 2\'s loop: where, and how often, does it step LocalSGD?", averaged=got[\'synchronizations\'], '
                                               "steps=got['sync_steps'], gradients=got['gradient_allreduces'][0])\n",
                                       'hidden': False,
                                       'locked': False},
                                   {   'code': '>>> from accelerate.local_sgd import LocalSGD\n'
                                               '>>> from effitrain_lessons.local_sgd.runs import run_custom_loop\n'
                                               '>>> from effitrain_lessons.shared.judging import plain\n'
                                               '>>> def measured(reports):\n'
                                               "...     return {'synchronizations': [r.synchronizations for r in reports], 'sync_steps': [r.sync_steps for r in reports], 'parameter_allreduces': "
                                               "[len(r.parameter_allreduces) for r in reports], 'gradient_allreduces': [len(r.gradient_allreduces) for r in reports], 'final_fingerprints': "
                                               '[r.final_fingerprint for r in reports]}\n'
                                               '>>> got = measured(run_custom_loop(fixed_loop, batches=10, num_processes=2))\n'
                                               '>>> want = {}\n'
                                               '>>> def slide_9_loop(accelerator, model, optimizer, dataloader):\n'
                                               '...     with LocalSGD(accelerator=accelerator, model=model, local_sgd_steps=4, enabled=True) as local_sgd:\n'
                                               '...         for batch in dataloader:\n'
                                               '...             with accelerator.accumulate(model):\n'
                                               '...                 accelerator.backward(model(**batch).loss)\n'
                                               '...                 optimizer.step()\n'
                                               '...                 optimizer.zero_grad()\n'
                                               '...                 local_sgd.step()\n'
                                               '>>> want.update(measured(run_custom_loop(slide_9_loop, batches=10, num_processes=2)))\n'
                                               '>>> got, want = (plain(got), plain(want))\n'
                                               ">>> assert all((type(n) is int for n in got['synchronizations']))\n"
                                               ">>> assert want['synchronizations'] == [10 // 4 + 1] * 2 and got == want\n"
                                               ">>> assert all(got['parameter_allreduces']) and (not any(got['gradient_allreduces']))\n"
                                               ">>> assert len(set(got['final_fingerprints'])) == 1\n",
                                       'hidden': True,
                                       'locked': False}],
                      'scored': True,
                      'setup': '',
                      'teardown': '',
                      'type': 'doctest'}]}
