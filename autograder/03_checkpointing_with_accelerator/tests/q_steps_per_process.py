OK_FORMAT = True

test = {   'name': 'q_steps_per_process',
    'points': 2,
    'suites': [   {   'cases': [   {   'code': '>>> import os\n'
                                               '>>> import torch\n'
                                               '>>> from accelerate import Accelerator\n'
                                               '>>> from accelerate.data_loader import prepare_data_loader\n'
                                               '>>> from torch.utils.data import DataLoader\n'
                                               '>>> from effitrain_lessons.shared.checks import check_prediction\n'
                                               '>>> from effitrain_lessons.shared.i18n import phrase\n'
                                               '>>> from effitrain_lessons.shared.judging import plain\n'
                                               '>>> start = sum(os.times()[:4])\n'
                                               ">>> got = {'steps': steps_per_process(40, 4, 2, 3), 'steps_big': steps_per_process(120000, 4, 2, 3)}\n"
                                               ">>> got['cpu_seconds'] = sum(os.times()[:4]) - start\n"
                                               '>>> want = {}\n'
                                               '>>> accelerator = Accelerator(gradient_accumulation_steps=4, cpu=True)\n'
                                               '>>> model = accelerator.prepare(torch.nn.Linear(1, 1))\n'
                                               '>>> shard = prepare_data_loader(DataLoader(torch.randn(40, 1), batch_size=1), num_processes=3, process_index=0, put_on_device=False)\n'
                                               ">>> want['steps'] = 0\n"
                                               '>>> for _epoch in range(2):\n'
                                               '...     for batch in shard:\n'
                                               '...         with accelerator.accumulate(model):\n'
                                               '...             accelerator.backward(model(batch).sum())\n'
                                               "...         want['steps'] += accelerator.sync_gradients\n"
                                               '>>> accelerator.gradient_accumulation_steps = 1\n'
                                               '>>> got, want = (plain(got), plain(want))\n'
                                               ">>> assert got['cpu_seconds'] < 0.5, phrase('{name} took {seconds} s of CPU time: predict from the numbers it is given, do not run what it predicts', "
                                               "name='steps_per_process', seconds=round(got['cpu_seconds'], 1))\n"
                                               '>>> check_prediction(\'steps_per_process(40, 4, 2, 3)\', got[\'steps\'], want[\'steps\'], why=phrase("Counted: the optimizer steps of one process\'s '
                                               'shard of 40 batches, 3 processes, 4 micro-batches per step, 2 epochs. Re-read section 6 on what prepare() does to the dataloader, and section 2 on how '
                                               'micro-batches become optimizer steps."))\n',
                                       'hidden': False,
                                       'locked': False},
                                   {   'code': '>>> import os\n'
                                               '>>> from effitrain_lessons.shared.judging import plain\n'
                                               '>>> from effitrain_lessons.with_accelerator.train_loop import optimizer_steps_on_one_process\n'
                                               '>>> cases = [(10, 3, 2, 4), (7, 2, 3, 2), (12, 1, 1, 1), (9, 2, 1, 2)]\n'
                                               '>>> start = sum(os.times()[:4])\n'
                                               ">>> got = {'steps': [steps_per_process(*case) for case in cases + [(300000, 3, 2, 4)]]}\n"
                                               ">>> got['cpu_seconds'] = sum(os.times()[:4]) - start\n"
                                               '>>> want = {}\n'
                                               ">>> want['cases'] = cases\n"
                                               ">>> want['steps'] = [optimizer_steps_on_one_process(*case) for case in cases]\n"
                                               '>>> got, want = (plain(got), plain(want))\n'
                                               ">>> assert got['cpu_seconds'] < 0.5\n"
                                               ">>> assert type(got['steps']) is list and len(got['steps']) == len(want['steps']) + 1\n"
                                               ">>> assert type(got['steps'][-1]) is int\n"
                                               ">>> for case, steps, steps_counted in zip(want['cases'], got['steps'], want['steps']):\n"
                                               '...     assert type(steps) is int, case\n'
                                               '...     assert steps == steps_counted, case\n',
                                       'hidden': True,
                                       'locked': False}],
                      'scored': True,
                      'setup': '',
                      'teardown': '',
                      'type': 'doctest'}]}
