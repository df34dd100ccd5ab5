"""The Fluid 1.x book's fit_a_line training loop, as the chapter writes it, with its two
import lines changed (``import paddle`` -> ``import fluid_nb.paddle as paddle``,
``import paddle.fluid as fluid`` -> ``import fluid_nb as fluid``)."""
import math
import random

import numpy


def test_book_fit_a_line_loop_trains_and_the_loss_falls():
    import fluid_nb.paddle as paddle
    import fluid_nb as fluid

    batch_size = 20
    train_reader = paddle.batch(
        paddle.reader.shuffle(paddle.dataset.uci_housing.train(), buf_size=500),
        batch_size=batch_size)
    test_reader = paddle.batch(
        paddle.reader.shuffle(paddle.dataset.uci_housing.test(), buf_size=500),
        batch_size=batch_size)

    # the book builds into the default programs; fresh ones keep this test to itself, and
    # seeds (the shuffle's and the initializer's) keep its small-learning-rate figures fixed
    random.seed(0)
    main_program, startup_program = fluid.Program(), fluid.Program()
    main_program.random_seed = startup_program.random_seed = 1
    with fluid.program_guard(main_program, startup_program), \
            fluid.scope_guard(fluid.Scope()):
        x = fluid.data(name='x', shape=[None, 13], dtype='float32')
        y = fluid.data(name='y', shape=[None, 1], dtype='float32')
        y_predict = fluid.layers.fc(input=x, size=1, act=None)
        cost = fluid.layers.square_error_cost(input=y_predict, label=y)
        avg_loss = fluid.layers.mean(cost)
        test_program = main_program.clone(for_test=True)
        sgd_optimizer = fluid.optimizer.SGD(learning_rate=0.001)
        sgd_optimizer.minimize(avg_loss)

        place = fluid.CPUPlace()
        exe = fluid.Executor(place)
        feeder = fluid.DataFeeder(place=place, feed_list=[x, y])
        exe.run(startup_program)

        # The book reads the loss as ``avg_loss_value[0]`` (mean's shape [1] in Paddle 1.x);
        # fluid_nb's mean is 0-D, as in Paddle 2.6, so the loss is read with float() here.
        def train_test(program, reader):
            total, count = 0.0, 0
            for data_test in reader():
                avg_loss_value, = exe.run(program=program, feed=feeder.feed(data_test),
                                          fetch_list=[avg_loss])
                total += float(avg_loss_value)
                count += 1
            return total / count

        test_before = train_test(test_program, test_reader)
        losses = []
        for pass_id in range(3):
            for data_train in train_reader():
                avg_loss_value, = exe.run(main_program, feed=feeder.feed(data_train),
                                          fetch_list=[avg_loss])
                assert not math.isnan(float(avg_loss_value))
                losses.append(float(avg_loss_value))
        test_after = train_test(test_program, test_reader)

        infer_data = next(paddle.batch(paddle.dataset.uci_housing.test(), batch_size=10)())
        infer_feat = numpy.array([data[0] for data in infer_data]).astype("float32")
        results = exe.run(test_program, feed={'x': infer_feat,
                                              'y': numpy.zeros((10, 1), "float32")},
                          fetch_list=[y_predict])

    per_pass = math.ceil(404 / batch_size)
    assert len(losses) == 3 * per_pass
    means = [numpy.mean(losses[i:i + per_pass]) for i in range(0, len(losses), per_pass)]
    # the book's small learning rate (0.001) moves the loss slowly but steadily
    assert means[0] > means[1] > means[2] and means[2] < 0.92 * means[0], means
    assert test_after < 0.92 * test_before, (test_before, test_after)
    assert results[0].shape == (10, 1)
