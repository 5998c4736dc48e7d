OK_FORMAT = True

test = {   'name': 'q_effective_batch',
    'points': 2,
    'suites': [   {   'cases': [   {   'code': ">>> assert type(predicted_effective_batch) is int and predicted_effective_batch > 0, 'predicted_effective_batch is a whole number of pairs'\n"
                                               ">>> assert type(predicted_optimizer_steps) is int and predicted_optimizer_steps > 0, 'predicted_optimizer_steps is a whole number of steps'\n",
                                       'hidden': False,
                                       'locked': False},
                                   {   'code': '>>> import contextlib\n'
                                               '>>> import io\n'
                                               '>>> import tempfile\n'
                                               '>>> from transformers import Trainer, TrainingArguments\n'
                                               '>>> from effitrain_lessons.data import tokenized_mrpc\n'
                                               '>>> from effitrain_lessons.models import tiny_bert\n'
                                               '>>> practice_trainer = Trainer(model=tiny_bert(), args=TrainingArguments(output_dir=tempfile.mkdtemp(), per_device_train_batch_size=4, '
                                               "gradient_accumulation_steps=3, num_train_epochs=2, save_strategy='no', report_to='none', disable_tqdm=True, use_cpu=True), "
                                               "train_dataset=tokenized_mrpc()['train'].select(range(96)))\n"
                                               '>>> with contextlib.redirect_stdout(io.StringIO()):\n'
                                               '...     _ = practice_trainer.train()\n'
                                               '>>> assert type(predicted_optimizer_steps) is int and type(predicted_effective_batch) is int\n'
                                               '>>> assert predicted_optimizer_steps == practice_trainer.state.global_step\n'
                                               '>>> assert predicted_effective_batch == 96 * 2 // practice_trainer.state.global_step\n',
                                       'hidden': True,
                                       'locked': False}],
                      'scored': True,
                      'setup': '',
                      'teardown': '',
                      'type': 'doctest'}]}
