OK_FORMAT = True

test = {   'name': 'q_memory_budget',
    'points': 2,
    'suites': [   {   'cases': [   {   'code': '>>> from transformers import TrainingArguments\n'
                                               ">>> assert isinstance(budget_args, TrainingArguments), 'budget_args should be a TrainingArguments(...)'\n"
                                               ">>> assert budget_args.per_device_train_batch_size * budget_args.gradient_accumulation_steps == 32, 'per_device_train_batch_size x "
                                               "gradient_accumulation_steps should be 32'\n",
                                       'hidden': False,
                                       'locked': False},
                                   {   'code': '>>> from effitrain_lessons.data import tokenized_mrpc\n'
                                               '>>> from effitrain_lessons.memory import measure_step\n'
                                               '>>> from effitrain_lessons.models import tiny_bert\n'
                                               '>>> check_model = tiny_bert(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)\n'
                                               '>>> if budget_args.activation_checkpointing:\n'
                                               '...     check_model.activation_checkpointing_enable()\n'
                                               '>>> _ = check_model.train()\n'
                                               ">>> check_saved = measure_step(check_model, tokenized_mrpc()['train'][:budget_args.per_device_train_batch_size]).saved_bytes\n"
                                               ">>> assert check_saved <= 2 ** 20, f'a micro-batch of {budget_args.per_device_train_batch_size} saves {check_saved / 2 ** 20:.2f} MiB, over the 1 MiB "
                                               "budget'\n",
                                       'hidden': False,
                                       'locked': False},
                                   {   'code': '>>> from effitrain_lessons.data import tokenized_mrpc\n'
                                               '>>> from effitrain_lessons.memory import measure_step\n'
                                               '>>> from effitrain_lessons.models import tiny_bert\n'
                                               '>>> hidden_model = tiny_bert()\n'
                                               '>>> if budget_args.activation_checkpointing:\n'
                                               '...     hidden_model.activation_checkpointing_enable()\n'
                                               '>>> _ = hidden_model.train()\n'
                                               ">>> assert measure_step(hidden_model, tokenized_mrpc()['validation'][-budget_args.per_device_train_batch_size:]).saved_bytes <= 2 ** 20\n"
                                               '>>> assert budget_args.per_device_train_batch_size * budget_args.gradient_accumulation_steps * budget_args.world_size == 32\n',
                                       'hidden': True,
                                       'locked': False}],
                      'scored': True,
                      'setup': '',
                      'teardown': '',
                      'type': 'doctest'}]}
