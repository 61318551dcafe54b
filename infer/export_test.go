package infer

import "github.com/bicyc/bicyc/data"

// BuildExampleBundle gives the examples of package infer_test the test fixture:
// the two-task model directory and the Fashion-MNIST test set.
func BuildExampleBundle() (dir string, test *data.Dataset, err error) {
	if _, err := InitRuntime(""); err != nil {
		return "", nil, err
	}
	fixtureOnce.Do(func() { fixtureValue, fixtureErr = buildFixture() })
	if fixtureErr != nil {
		return "", nil, fixtureErr
	}
	return fixtureValue.twoTasks, fixtureValue.test, nil
}
