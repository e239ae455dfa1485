"""What the stages share: params turned into the library's plain arguments, the checks of params
against the data, the names of settings in messages, and the steps a stage (or the competition
pipeline) runs. The only package besides config that knows params.yaml's keys."""
