OK_FORMAT = True

test = {   'name': 'q_step_flops',
    'points': 2,
    'suites': [   {   'cases': [   {   'code': '>>> import os\n'
                                               '>>> import torch\n'
                                               '>>> from effitrain_lessons.shared.checks import check_prediction\n'
                                               '>>> from effitrain_lessons.shared.data import tokenized_mrpc\n'
                                               '>>> from effitrain_lessons.shared.i18n import phrase\n'
                                               '>>> from effitrain_lessons.shared.judging import plain\n'
                                               '>>> from effitrain_lessons.shared.memory import count_step\n'
                                               '>>> from effitrain_lessons.with_trainer.trainer import fresh_model\n'
                                               '>>> splits = [(16, 2)]\n'
                                               '>>> start = sum(os.times()[:4])\n'
                                               '>>> ran = []\n'
                                               '>>> watch = torch.nn.modules.module.register_module_forward_pre_hook(lambda *args: ran.append(1))\n'
                                               '>>> try:\n'
                                               "...     got = {'mflop': [predicted_mflop(*split) for split in splits]}\n"
                                               "...     got['mflop_big'] = predicted_mflop(*(4096, 64))\n"
                                               '... finally:\n'
                                               '...     watch.remove()\n'
                                               ">>> got['cpu_seconds'] = sum(os.times()[:4]) - start\n"
                                               ">>> got['ran_model'] = bool(ran)\n"
                                               '>>> want = {}\n'
                                               ">>> flops_model = fresh_model('tiny', seed=0)\n"
                                               '>>> flops_model.config.use_cache = False\n'
                                               '>>> flops_model.activation_checkpointing_enable()\n'
                                               '>>> _ = flops_model.train()\n'
                                               ">>> flops_rows = tokenized_mrpc()['train']\n"
                                               ">>> want['mflop'] = []\n"
                                               '>>> for micro_batch, accumulation in splits:\n'
                                               '...     with count_step() as counted:\n'
                                               '...         for start in range(0, micro_batch * accumulation, micro_batch):\n'
                                               '...             flops_model(**flops_rows[start:start + micro_batch]).loss.backward()\n'
                                               "...     want['mflop'].append(counted.flops / 1000000.0)\n"
                                               '>>> got, want = (plain(got), plain(want))\n'
                                               ">>> assert not got['ran_model'], phrase('predicted_mflop ran a model: predict from what sections 4 and 5 measured, without running it')\n"
                                               ">>> assert got['cpu_seconds'] < 0.5, phrase('{name} took {seconds} s of CPU time: predict from the numbers it is given, do not run what it predicts', "
                                               "name='predicted_mflop', seconds=round(got['cpu_seconds'], 1))\n"
                                               ">>> check_prediction('predicted_mflop(16, 2)', got['mflop'][0], want['mflop'][0], rel=0.01, why=phrase('Re-read section 4 (the FLOPs row, and what "
                                               "checkpointing adds) and section 5 (what one optimizer step runs).'))\n",
                                       'hidden': False,
                                       'locked': False},
                                   {   'code': '>>> import os\n'
                                               '>>> import torch\n'
                                               '>>> from effitrain_lessons.shared.data import tokenized_mrpc\n'
                                               '>>> from effitrain_lessons.shared.judging import finite, plain\n'
                                               '>>> from effitrain_lessons.shared.memory import count_step\n'
                                               '>>> from effitrain_lessons.with_trainer.trainer import fresh_model\n'
                                               '>>> splits = [(8, 3), (32, 2)]\n'
                                               '>>> start = sum(os.times()[:4])\n'
                                               '>>> ran = []\n'
                                               '>>> watch = torch.nn.modules.module.register_module_forward_pre_hook(lambda *args: ran.append(1))\n'
                                               '>>> try:\n'
                                               "...     got = {'mflop': [predicted_mflop(*split) for split in splits]}\n"
                                               "...     got['mflop_big'] = predicted_mflop(*(2048, 128))\n"
                                               '... finally:\n'
                                               '...     watch.remove()\n'
                                               ">>> got['cpu_seconds'] = sum(os.times()[:4]) - start\n"
                                               ">>> got['ran_model'] = bool(ran)\n"
                                               '>>> want = {}\n'
                                               ">>> flops_model = fresh_model('tiny', seed=1)\n"
                                               '>>> flops_model.config.use_cache = False\n'
                                               '>>> flops_model.activation_checkpointing_enable()\n'
                                               '>>> _ = flops_model.train()\n'
                                               ">>> flops_rows = tokenized_mrpc()['validation']\n"
                                               ">>> want['mflop'] = []\n"
                                               '>>> for micro_batch, accumulation in splits:\n'
                                               '...     with count_step() as counted:\n'
                                               '...         for start in range(0, micro_batch * accumulation, micro_batch):\n'
                                               '...             flops_model(**flops_rows[start:start + micro_batch]).loss.backward()\n'
                                               "...     want['mflop'].append(counted.flops / 1000000.0)\n"
                                               '>>> got, want = (plain(got), plain(want))\n'
                                               ">>> assert not got['ran_model'] and got['cpu_seconds'] < 0.5\n"
                                               ">>> assert type(got['mflop_big']) in (int, float) and finite([got['mflop_big']])\n"
                                               ">>> assert type(got['mflop']) is list and len(got['mflop']) == len(want['mflop'])\n"
                                               ">>> assert all((type(n) in (int, float) for n in got['mflop'])) and finite(got['mflop'])\n"
                                               ">>> assert all((abs(g - w) <= 0.01 * w for g, w in zip(got['mflop'], want['mflop'])))\n",
                                       'hidden': True,
                                       'locked': False}],
                      'scored': True,
                      'setup': '',
                      'teardown': '',
                      'type': 'doctest'}]}
