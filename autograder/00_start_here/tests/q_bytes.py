OK_FORMAT = True

test = {   'name': 'q_bytes',
    'points': 1,
    'suites': [   {   'cases': [   {   'code': '>>> import torch\n'
                                               '>>> from effitrain_lessons.checks import check_prediction\n'
                                               '>>> from effitrain_lessons.i18n import phrase\n'
                                               ">>> check_prediction('tensor_bytes((8, 32, 64), torch.float32)', tensor_bytes((8, 32, 64), torch.float32), torch.empty(8, 32, 64, "
                                               "dtype=torch.float32).nbytes, why=phrase('A tensor takes (number of elements) x (bytes per element), and a float32 takes 4 bytes.'))\n",
                                       'hidden': False,
                                       'locked': False},
                                   {   'code': '>>> import torch\n'
                                               '>>> for shape, dtype in [((8, 32, 64), torch.bfloat16), ((3, 5), torch.int8), ((16, 128, 768), torch.float16), ((7,), torch.float64)]:\n'
                                               '...     assert type(tensor_bytes(shape, dtype)) is int and tensor_bytes(shape, dtype) == torch.empty(shape, dtype=dtype).element_size() * '
                                               'torch.empty(shape, dtype=dtype).numel()\n',
                                       'hidden': True,
                                       'locked': False}],
                      'scored': True,
                      'setup': '',
                      'teardown': '',
                      'type': 'doctest'}]}
