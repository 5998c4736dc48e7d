OK_FORMAT = True

test = {   'name': 'q_bytes',
    'points': 1,
    'suites': [   {   'cases': [   {'code': ">>> assert type(tensor_bytes) is int, 'tensor_bytes should be an int: a whole number of bytes'\n", 'hidden': False, 'locked': False},
                                   {   'code': '>>> import torch\n>>> assert type(tensor_bytes) is int and tensor_bytes == torch.empty(8, 32, 64).element_size() * torch.empty(8, 32, 64).numel()\n',
                                       'hidden': True,
                                       'locked': False}],
                      'scored': True,
                      'setup': '',
                      'teardown': '',
                      'type': 'doctest'}]}
