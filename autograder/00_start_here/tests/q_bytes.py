OK_FORMAT = True

test = {   'name': 'q_bytes',
    'points': 1,
    'suites': [   {   'cases': [   {   'code': '>>> import torch\n'
                                               '>>> from effitrain_lessons.shared.checks import check_prediction\n'
                                               '>>> from effitrain_lessons.shared.i18n import phrase\n'
                                               '>>> from effitrain_lessons.shared.judging import plain\n'
                                               ">>> got = {'bytes': tensor_bytes((8, 32, 64), torch.float32)}\n"
                                               '>>> want = {}\n'
                                               ">>> want['bytes'] = torch.empty(8, 32, 64, dtype=torch.float32).nbytes\n"
                                               '>>> got, want = (plain(got), plain(want))\n'
                                               '>>> check_prediction(\'tensor_bytes((8, 32, 64), torch.float32)\', got[\'bytes\'], want[\'bytes\'], why=phrase("Re-read exercise 1\'s introduction: '
                                               'what a dtype knows about its elements."))\n',
                                       'hidden': False,
                                       'locked': False},
                                   {   'code': '>>> import torch\n'
                                               '>>> from effitrain_lessons.shared.judging import plain\n'
                                               '>>> cases = [((8, 32, 64), torch.bfloat16), ((3, 5), torch.int8), ((16, 128, 768), torch.float16), ((7,), torch.float64)]\n'
                                               ">>> got = {'bytes': [tensor_bytes(shape, dtype) for shape, dtype in cases]}\n"
                                               '>>> want = {}\n'
                                               ">>> want['bytes'] = [torch.empty(shape, dtype=dtype).nbytes for shape, dtype in cases]\n"
                                               '>>> got, want = (plain(got), plain(want))\n'
                                               ">>> assert type(got['bytes']) is list and all((type(n) is int for n in got['bytes']))\n"
                                               ">>> assert got['bytes'] == want['bytes']\n",
                                       'hidden': True,
                                       'locked': False}],
                      'scored': True,
                      'setup': '',
                      'teardown': '',
                      'type': 'doctest'}]}
