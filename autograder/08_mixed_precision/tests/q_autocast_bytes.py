OK_FORMAT = True

test = {   'name': 'q_autocast_bytes',
    'points': 3,
    'suites': [   {   'cases': [   {   'code': '>>> import os\n'
                                               '>>> import torch\n'
                                               '>>> from effitrain_lessons.mixed_precision.measure import saved_bytes\n'
                                               '>>> from effitrain_lessons.shared.checks import check_prediction\n'
                                               '>>> from effitrain_lessons.shared.i18n import phrase\n'
                                               '>>> from effitrain_lessons.shared.judging import plain\n'
                                               '>>> start = sum(os.times()[:4])\n'
                                               '>>> ran = []\n'
                                               '>>> watch = torch.nn.modules.module.register_module_forward_pre_hook(lambda *args: ran.append(1))\n'
                                               '>>> try:\n'
                                               "...     got = {'bytes': predicted_autocast_bytes(300, 48, 192)}\n"
                                               '...     if not ran:\n'
                                               "...         got['bytes_big'] = predicted_autocast_bytes(65536, 8192, 32768)\n"
                                               '... finally:\n'
                                               '...     watch.remove()\n'
                                               ">>> got['cpu_seconds'] = sum(os.times()[:4]) - start\n"
                                               ">>> got['ran_model'] = bool(ran)\n"
                                               '>>> want = {}\n'
                                               '>>> torch.manual_seed(3)\n'
                                               '>>> measured = saved_bytes(DeepMLP(48, 192), torch.randn(300, 48), torch.bfloat16)\n'
                                               ">>> want['bytes'] = float(measured.total_bytes)\n"
                                               '>>> got, want = (plain(got), plain(want))\n'
                                               '>>> assert not got[\'ran_model\'], phrase("predicted_autocast_bytes ran a model: predict from section 2\'s table, without running it")\n'
                                               ">>> assert got['cpu_seconds'] < 0.5, phrase('{name} took {seconds} s of CPU time: predict from the numbers it is given, do not run what it predicts', "
                                               "name='predicted_autocast_bytes', seconds=round(got['cpu_seconds'], 1))\n"
                                               ">>> check_prediction('predicted_autocast_bytes(300, 48, 192)', got['bytes'], want['bytes'], rel=0.02, why=phrase('Re-read section 2: what a Linear "
                                               "layer saves under autocast, and in which type; what an op saves when it is given a 16-bit tensor; and what does not grow with the tokens.'))\n",
                                       'hidden': False,
                                       'locked': False},
                                   {   'code': '>>> import os\n'
                                               '>>> import torch\n'
                                               '>>> from effitrain_lessons.mixed_precision.measure import saved_bytes\n'
                                               '>>> from effitrain_lessons.shared.judging import finite, plain\n'
                                               '>>> shapes = [(8, 64, 256), (1000, 32, 96), (64, 128, 512)]\n'
                                               '>>> start = sum(os.times()[:4])\n'
                                               '>>> ran = []\n'
                                               '>>> watch = torch.nn.modules.module.register_module_forward_pre_hook(lambda *args: ran.append(1))\n'
                                               '>>> try:\n'
                                               "...     got = {'bytes': [predicted_autocast_bytes(*shape) for shape in shapes]}\n"
                                               '...     if not ran:\n'
                                               "...         got['bytes_big'] = predicted_autocast_bytes(131072, 16384, 65536)\n"
                                               '... finally:\n'
                                               '...     watch.remove()\n'
                                               ">>> got['cpu_seconds'] = sum(os.times()[:4]) - start\n"
                                               ">>> got['ran_model'] = bool(ran)\n"
                                               '>>> want = {}\n'
                                               ">>> want['bytes'] = []\n"
                                               '>>> for tokens, width, hidden in shapes:\n'
                                               '...     torch.manual_seed(4)\n'
                                               '...     block = DeepMLP(width, hidden)\n'
                                               "...     want['bytes'].append(saved_bytes(block, torch.randn(tokens, width), torch.bfloat16).total_bytes)\n"
                                               '>>> got, want = (plain(got), plain(want))\n'
                                               ">>> assert not got['ran_model'] and got['cpu_seconds'] < 0.5\n"
                                               ">>> assert type(got['bytes_big']) in (int, float) and finite([got['bytes_big']])\n"
                                               ">>> assert type(got['bytes']) is list and len(got['bytes']) == len(want['bytes'])\n"
                                               ">>> assert all((type(n) in (int, float) for n in got['bytes'])) and finite(got['bytes'])\n"
                                               ">>> assert all((abs(g - w) <= 0.02 * w for g, w in zip(got['bytes'], want['bytes'])))\n",
                                       'hidden': True,
                                       'locked': False}],
                      'scored': True,
                      'setup': '',
                      'teardown': '',
                      'type': 'doctest'}]}
