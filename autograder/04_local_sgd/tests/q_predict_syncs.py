OK_FORMAT = True

test = {   'name': 'q_predict_syncs',
    'points': 2,
    'suites': [   {   'cases': [   {   'code': ">>> assert type(predicted_local_syncs) is int and type(predicted_ddp_syncs) is int, 'predictions are whole numbers'\n"
                                               ">>> assert predicted_local_syncs < predicted_ddp_syncs, 'Local SGD should synchronize less often than data parallel'\n",
                                       'hidden': False,
                                       'locked': False},
                                   {   'code': '>>> from effitrain_lessons.local_sgd import RunConfig, launch\n'
                                               '>>> assert type(predicted_local_syncs) is int and type(predicted_ddp_syncs) is int\n'
                                               ">>> counted = launch([RunConfig(mode='local_sgd', k=6, steps=20, layers=1), RunConfig(mode='ddp', steps=20, layers=1)], num_processes=2)\n"
                                               '>>> assert predicted_local_syncs == counted[0][0].synchronizations == counted[0][1].synchronizations\n'
                                               '>>> assert predicted_ddp_syncs == counted[1][0].synchronizations\n',
                                       'hidden': True,
                                       'locked': False}],
                      'scored': True,
                      'setup': '',
                      'teardown': '',
                      'type': 'doctest'}]}
