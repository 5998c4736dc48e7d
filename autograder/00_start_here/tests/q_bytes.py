OK_FORMAT = True

test = {   'name': 'q_bytes',
    'points': 1,
    'suites': [   {   'cases': [   {   'code': '>>> import torch\n'
                                               '>>> from effitrain_lessons.checks import check_prediction\n'
                                               '>>> from effitrain_lessons.i18n import phrase\n'
                                               ">>> assert type(tensor_bytes((8, 32, 64), torch.float32)) is int, phrase('tensor_bytes(shape, dtype) should return a whole number of bytes, an int')\n"
                                               ">>> check_prediction('tensor_bytes((3, 5), torch.int8)', tensor_bytes((3, 5), torch.int8), torch.empty(3, 5, dtype=torch.int8).nbytes, why=phrase('A "
                                               "tensor takes (number of elements) x (bytes per element), and an int8 takes 1 byte.'))\n"
                                               ">>> check_prediction('score_bytes(8, 32, torch.bfloat16)', score_bytes(8, 32, torch.bfloat16), torch.empty(8, model.config.num_attention_heads, 32, "
                                               "32, dtype=torch.bfloat16).nbytes, why=phrase('One score per pair of tokens, per head, per sequence: count the elements of that shape, and a bfloat16 "
                                               "takes 2 bytes. The number of heads is model.config.num_attention_heads.'))\n",
                                       'hidden': False,
                                       'locked': False},
                                   {   'code': '>>> import torch\n'
                                               '>>> for shape, dtype in [((8, 32, 64), torch.bfloat16), ((16, 128, 768), torch.float16), ((7,), torch.float64)]:\n'
                                               '...     assert type(tensor_bytes(shape, dtype)) is int and tensor_bytes(shape, dtype) == torch.empty(shape, dtype=dtype).element_size() * '
                                               'torch.empty(shape, dtype=dtype).numel()\n'
                                               '>>> for sequences, tokens, dtype in [(4, 128, torch.float32), (2, 512, torch.float16)]:\n'
                                               '...     assert score_bytes(sequences, tokens, dtype) == sequences * model.config.num_attention_heads * tokens * tokens * dtype.itemsize\n',
                                       'hidden': True,
                                       'locked': False}],
                      'scored': True,
                      'setup': '',
                      'teardown': '',
                      'type': 'doctest'}]}
