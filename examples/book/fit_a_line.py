"""Linear regression (the Fluid 1.x book, chapter 01): Boston house prices.

The book's program with its two import lines changed: one fc layer from 13 features to
the price, square error, SGD; the test program is cloned before the optimizer; the
inference model is saved, loaded back and run on a test batch. ``uci_housing`` ships
with the package, so this chapter never downloads anything.

    python examples/book/fit_a_line.py --num_epochs 100
"""
import argparse
import tempfile

import numpy

import fluid_nb.paddle as paddle  # the book: import paddle
import fluid_nb as fluid  # the book: import paddle.fluid as fluid


def main(num_epochs=100, batch_size=20, save_dir=None, seed=90):
    """Train, test, save, reload and infer; returns the batch costs, the test costs and
    the predictions next to the ground truth."""
    place = fluid.CPUPlace()
    save_dir = save_dir or tempfile.mkdtemp(prefix="fit_a_line_")
    train_reader = paddle.batch(paddle.reader.shuffle(paddle.dataset.uci_housing.train(),
                                                      buf_size=500), batch_size=batch_size)
    test_reader = paddle.batch(paddle.reader.shuffle(paddle.dataset.uci_housing.test(),
                                                     buf_size=500), batch_size=batch_size)

    main_program = fluid.default_main_program()
    startup_program = fluid.default_startup_program()
    main_program.random_seed = startup_program.random_seed = seed
    x = fluid.data(name="x", shape=[None, 13], dtype="float32")
    y = fluid.data(name="y", shape=[None, 1], dtype="float32")
    y_predict = fluid.layers.fc(input=x, size=1, act=None)
    avg_loss = fluid.layers.mean(fluid.layers.square_error_cost(input=y_predict, label=y))
    test_program = main_program.clone(for_test=True)
    fluid.optimizer.SGD(learning_rate=0.001).minimize(avg_loss)

    exe = fluid.Executor(place)
    feeder = fluid.DataFeeder(place=place, feed_list=[x, y])
    exe.run(startup_program)
    costs, test_costs = [], []
    for pass_id in range(num_epochs):
        for data_train in train_reader():
            (avg_loss_value,) = exe.run(main_program, feed=feeder.feed(data_train),
                                        fetch_list=[avg_loss])
            costs.append(float(avg_loss_value[0]))
        test_costs.append(numpy.mean([
            exe.run(test_program, feed=feeder.feed(data), fetch_list=[avg_loss])[0][0]
            for data in test_reader()]))
        if pass_id % 10 == 0 or pass_id == num_epochs - 1:
            print("Pass %d, train cost %.2f, test cost %.2f" % (pass_id, avg_loss_value[0],
                                                               test_costs[-1]))
        fluid.io.save_inference_model(save_dir, ["x"], [y_predict], exe)

    infer_exe = fluid.Executor(place)
    with fluid.scope_guard(fluid.core.Scope()):
        program, feed_names, fetch_targets = fluid.io.load_inference_model(save_dir, infer_exe)
        infer_data = next(paddle.batch(paddle.dataset.uci_housing.test(), batch_size=10)())
        infer_feat = numpy.array([data[0] for data in infer_data]).astype("float32")
        infer_label = numpy.array([data[1] for data in infer_data]).astype("float32")
        (results,) = infer_exe.run(program, feed={feed_names[0]: infer_feat},
                                   fetch_list=fetch_targets)
    print("infer results (house price) and ground truth:")
    for idx, (val, truth) in enumerate(zip(results, infer_label)):
        print("%d: %.2f  %.2f" % (idx, val, truth[0]))
    return {"costs": costs, "test_costs": test_costs, "predictions": results,
            "truth": infer_label, "save_dir": save_dir}


if __name__ == "__main__":
    parser = argparse.ArgumentParser("fit_a_line")
    parser.add_argument("--num_epochs", type=int, default=100)
    args = parser.parse_args()
    main(args.num_epochs)
